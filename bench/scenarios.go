package main

import (
	"context"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// scenarios is the registry `go run ./bench` chooses from. Add a scenario by appending
// an entry: its Setup reuses the run's servers through env and returns one slice of
// load; its Baseline says what it is compared with.
var scenarios = []harness.Scenario{
	{
		Name:        "accounts-get",
		Description: "authenticated GET /v1/accounts/{accountId} vs a hello-world Go server",
		Target:      0.5,
		Baseline:    harness.HelloWorld(),
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			sb, err := env.Switchboard(ctx)
			if err != nil {
				return nil, err
			}
			return env.HTTPLoad(harness.Get(sb.URL+"/v1/accounts/"+sb.AccountID, sb.Header())).Run, nil
		},
	},
	{
		// self-check proves the method: two identical servers must come out at a ratio
		// near 1.0, however noisy the machine.
		Name:        "self-check",
		Description: "hello-world vs hello-world, two processes; the ratio should be ≈ 1.0",
		Target:      0.8,
		Baseline:    harness.HelloWorld(),
		Manual:      true,
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			srv, err := env.StartHelloWorld(ctx)
			if err != nil {
				return nil, err
			}
			return env.HTTPLoad(harness.Get(srv.URL+"/hello", nil)).Run, nil
		},
	},
	{
		// pgbench-self-check proves the pgbench baseline runner the same way: pgbench
		// against itself must come out near 1.0. Needs -database postgres.
		Name:        "pgbench-self-check",
		Description: "pgbench SELECT 1 vs itself at 16 clients; the ratio should be ≈ 1.0",
		Target:      0.8,
		Baseline:    selectOne.Baseline(),
		Manual:      true,
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			return selectOne.Baseline().Setup(ctx, env)
		},
	},
}

var selectOne = harness.PGBench{Name: "pgbench-select-1", Script: "SELECT 1;\n", Clients: 16}
