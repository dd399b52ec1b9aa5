package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is the release this binary was built from, stamped at build
// time (`make release` does it from `git describe`):
//
//	go build -ldflags "-X main.version=v1.2.0" ./cmd/switchboard
var version = "dev"

// versionLine is what --version and `switchboard version` print: the
// release, then the commit it was built from when Go recorded one (a
// build inside a git checkout), and the Go toolchain and platform.
func versionLine(info *debug.BuildInfo, ok bool) string {
	var details []string
	if ok {
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if settings["vcs.modified"] == "true" {
				rev += "-dirty"
			}
			details = append(details, "commit "+rev)
		}
		if t := settings["vcs.time"]; t != "" {
			details = append(details, t)
		}
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return "switchboard " + version + " (" + strings.Join(details, ", ") + ")"
}

// buildVersion is versionLine for this binary.
func buildVersion() string { return versionLine(debug.ReadBuildInfo()) }

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		// The version needs no configuration: a bad SWITCHBOARD_* variable
		// must not hide it.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), buildVersion()+"\n")
			return err
		},
	}
}

// unknownCommand answers a command name that does not exist: the error,
// and the usage of the command it was given to.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return &usageError{msg: msg, usage: cmd.UsageString()}
}

// usageError is a command line that names no command: main prints the
// message and the usage, and exits 2.
type usageError struct {
	msg   string
	usage string
}

func (e *usageError) Error() string { return e.msg }

// catchUnknownCommands makes every command that only groups others (root,
// accounts, keys, …) answer an unknown subcommand with a usage error:
// cobra alone exits 0 with the help for `switchboard accounts bogus`.
func catchUnknownCommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = unknownCommand
		cmd.SuggestionsMinimumDistance = 2
	}
	for _, c := range cmd.Commands() {
		catchUnknownCommands(c)
	}
}
