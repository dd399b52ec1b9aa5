// Command switchboard runs the Switchboard service and its operator tasks:
// serving the API, migrating the database, and issuing the accounts,
// credentials, numbers and domains that the API itself never hands out.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.uber.org/dig"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(context.Background()); err != nil {
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
