package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// secretValue is a flag holding a secret (a token, a password, a URL with
// one). Given as "@PATH" it is read from that file, and as "@-" from
// standard input, so that it never shows in the process list or the shell
// history; a trailing line break is dropped. Any other value is taken as
// it is.
type secretValue struct {
	target *string
	stdin  io.Reader
}

var _ pflag.Value = (*secretValue)(nil)

// secretVar registers a secret flag on f.
func secretVar(f *pflag.FlagSet, target *string, name, usage string) {
	f.Var(&secretValue{target: target, stdin: os.Stdin}, name, usage+` (@FILE reads it from a file, @- from standard input)`)
}

func (v *secretValue) Set(s string) error {
	path, fromFile := strings.CutPrefix(s, "@")
	if !fromFile {
		*v.target = s
		return nil
	}
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(v.stdin, 1<<20))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read the value from %s: %w", s, err)
	}
	*v.target = strings.TrimRight(string(b), "\r\n")
	if *v.target == "" {
		return fmt.Errorf("%s is empty", s)
	}
	return nil
}

// String never shows the secret (cobra prints defaults in help).
func (v *secretValue) String() string {
	if v.target == nil || *v.target == "" {
		return ""
	}
	return "(set)"
}

func (*secretValue) Type() string { return "secret" }
