package main

import (
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/adapters/edge/mcp"
)

// The credentials of `switchboard mcp` come from these variables only: a
// desktop client's configuration sets them for the process it starts, and
// flags would show them in the process list.
const (
	apiKeyVariable    = "SWITCHBOARD_API_KEY"
	apiSecretVariable = "SWITCHBOARD_API_SECRET"
)

func newMCPCommand(s *settings) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools of a Switchboard server over standard input and output, for desktop AI clients",
		Long: `Serve the Model Context Protocol over standard input and output, for desktop
clients that start a local program, by calling the /mcp endpoint of the
Switchboard server at --url (SWITCHBOARD_URL) with the credentials in
` + apiKeyVariable + ` and ` + apiSecretVariable + ` (environment only: never as flags).
The URL must be https://, or http:// to this machine only (127.0.0.0/8, ::1,
localhost), with no user:password@; redirects are not followed, so the
credentials go to that server only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range []string{"api-key", "api-secret"} {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s is refused: a secret on the command line shows in the process list; set %s and %s in the environment", name, apiKeyVariable, apiSecretVariable)
				}
			}
			key, _ := lookupEnv(apiKeyVariable)
			secret, _ := lookupEnv(apiSecretVariable)
			if key == "" || secret == "" {
				return errors.New("set " + apiKeyVariable + " and " + apiSecretVariable + " in the environment to the API key and secret of the account the tools act for")
			}
			// Standard output carries the protocol: the log goes to
			// standard error, warnings only.
			logger := s.cfg.NewLogger()
			return mcp.Proxy(cmd.Context(), &sdk.StdioTransport{}, mcp.ProxyOptions{
				URL: url, APIKey: key, APISecret: secret, Version: version, Logger: logger,
			})
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080", "base URL of the Switchboard server: https://, or http:// to this machine only")
	// Declared only to be refused with a pointer to the environment.
	for _, name := range []string{"api-key", "api-secret"} {
		cmd.Flags().String(name, "", "refused: use "+apiKeyVariable+" and "+apiSecretVariable)
		_ = cmd.Flags().MarkHidden(name)
	}
	return cmd
}
