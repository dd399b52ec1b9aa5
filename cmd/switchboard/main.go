// Command switchboard runs the Switchboard service and its operator tasks:
// serving the API, migrating the database, and issuing the accounts,
// credentials, numbers and domains that the API itself never hands out.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"go.uber.org/dig"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// defaultGCPercent is the garbage collector's target unless GOGC is set.
// A request allocates a few kilobytes that die with it, so collecting less
// often than Go's default of 100 saves CPU. The live heap is a few tens of
// megabytes, so letting it grow fourfold between collections costs little
// memory. GOMEMLIMIT, when set, still caps it.
const defaultGCPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(context.Background())
	var usage *usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "switchboard: %s\n\n%s", usage.msg, usage.usage)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "switchboard: "+describe(err))
		os.Exit(1)
	}
}

// describe renders an error as one line: a validation failure lists its
// broken rules, a start-up failure its root cause without fx's wrapping.
func describe(err error) string {
	err = dig.RootCause(err)
	var fe *failure.Error
	if errors.As(err, &fe) && fe.Kind != failure.KindInternal {
		if len(fe.Fields) == 0 {
			return fe.Message
		}
		parts := make([]string, len(fe.Fields))
		for i, f := range fe.Fields {
			parts[i] = f.Message
		}
		return "invalid input: " + strings.Join(parts, "; ")
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
