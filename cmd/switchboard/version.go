package main

import (
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
