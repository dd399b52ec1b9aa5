// Command bench measures Switchboard against baselines on a shared, noisy machine and
// reports ratios, never bare rates as results; latency scenarios, which have no
// baseline, report latency percentiles against a target. `make bench` runs it; see
// package harness for the method, package queue for the job-queue scenarios and
// package messaging for the messaging API's.
//
// Usage:
//
//	go run ./bench [-scenarios a,b] [-slice 3s] [-rounds 10] [-workers 32]
//	               [-database sqlite|postgres] [-switchboard BIN] [-against BIN]
//	               [-json FILE]
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func main() {
	// The hidden hello-world mode is checked before flag parsing so it stays out of -h.
	if len(os.Args) == 3 && os.Args[1] == harness.HelloWorldFlag {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := harness.ServeHelloWorld(ctx, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run())
}

func run() int {
	var (
		names     = flag.String("scenarios", "", "comma-separated scenarios to run (default: all but manual ones)")
		slice     = flag.Duration("slice", 3*time.Second, "duration of each scenario and baseline slice (at most 5s)")
		rounds    = flag.Int("rounds", 10, "scenario/baseline rounds per scenario (10 or more for a result)")
		workers   = flag.Int("workers", 32, "concurrent workers of the HTTP load generator")
		database  = flag.String("database", "sqlite", "database of the server under test: sqlite or postgres ($DATABASE_URL)")
		bin       = flag.String("switchboard", "", "prebuilt switchboard binary (default: build ./cmd/switchboard)")
		against   = flag.String("against", "", "another switchboard binary: each ratio scenario's baseline becomes the same scenario run against it, to compare two builds")
		jsonPath  = flag.String("json", "", "also write the results as JSON to this file")
		listNames = flag.Bool("list", false, "list the scenarios and exit")
	)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The load generator shares the machine with the server under test, so its own
	// cost matters: BENCH_DEBUG_ADDR serves its profiles, as SWITCHBOARD_DEBUG_ADDR
	// serves the server's.
	if addr := os.Getenv("BENCH_DEBUG_ADDR"); addr != "" {
		go func() { log.Error("bench debug server", "err", http.ListenAndServe(addr, nil)) }()
	}

	if *listNames {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		for _, s := range scenarios {
			fmt.Fprintf(tw, "%s\t%s (%s)\n", s.Name, s.Description, describeTarget(s))
		}
		_ = tw.Flush()
		return 0
	}
	selected, err := selectScenarios(*names)
	if err == nil {
		err = validate(*slice, *rounds, *workers, *database)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	root, err := harness.FindRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := harness.NewEnv(root, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer env.Close()
	env.Database, env.Workers, env.SwitchboardBin = *database, *workers, *bin
	env.PostgresAdminURL = cmp.Or(os.Getenv("DATABASE_URL"), defaultPostgresURL)
	if *against != "" {
		other, err := harness.NewEnv(root, log.With("build", "against"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer other.Close()
		other.Database, other.Workers, other.SwitchboardBin = env.Database, env.Workers, *against
		other.PostgresAdminURL = env.PostgresAdminURL
		env.Against = other
	}

	cfg := harness.Config{Slice: *slice, Rounds: *rounds, Warmup: min(*slice, time.Second)}
	report := harness.NewReport(env, cfg)
	report.WriteHeader(os.Stdout)
	before, err := harness.ReadCPUTimes()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	for _, sc := range selected {
		log.Info("scenario", "name", sc.Name, "target", describeTarget(sc))
		res := harness.Run(ctx, env, sc, cfg)
		if res.Skipped != "" {
			log.Warn("scenario skipped", "name", sc.Name, "why", res.Skipped)
		}
		if res.Error != "" {
			log.Error("scenario failed", "name", sc.Name, "err", res.Error)
		}
		report.Results = append(report.Results, res)
		if ctx.Err() != nil {
			break
		}
	}
	if after, err := harness.ReadCPUTimes(); err == nil {
		report.StealPercent = harness.StealPercent(before, after)
	}
	report.WriteTable(os.Stdout)
	if *jsonPath != "" {
		if err := report.WriteJSON(*jsonPath); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	for _, res := range report.Results {
		if res.Failed() {
			return 1
		}
	}
	return 0
}

// describeTarget says what a scenario is compared with and what it must reach.
func describeTarget(sc harness.Scenario) string {
	var out string
	if sc.Latency != nil {
		var targets []string
		for _, db := range slices.Sorted(maps.Keys(sc.Latency.P50)) {
			targets = append(targets, fmt.Sprintf("%s %s", db, sc.Latency.P50[db]))
		}
		out = "latency, no baseline, target p50 ≤ " + strings.Join(targets, ", ")
	} else {
		out = fmt.Sprintf("baseline %s, target ratio ≥ %.2f", sc.Baseline.Name, sc.Target)
	}
	if len(sc.Databases) > 0 {
		out += "; -database " + strings.Join(sc.Databases, " or ") + " only"
	}
	return out
}

// selectScenarios resolves -scenarios against the registry, in the order given.
func selectScenarios(names string) ([]harness.Scenario, error) {
	if names == "" {
		var all []harness.Scenario
		for _, s := range scenarios {
			if !s.Manual {
				all = append(all, s)
			}
		}
		return all, nil
	}
	var out []harness.Scenario
	for name := range strings.SplitSeq(names, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(scenarios, func(s harness.Scenario) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown scenario %q (try -list)", name)
		}
		out = append(out, scenarios[i])
	}
	return out, nil
}

func validate(slice time.Duration, rounds, workers int, database string) error {
	switch {
	case slice <= 0 || slice > 5*time.Second:
		return fmt.Errorf("-slice %s: want more than 0 and at most 5s, so rounds stay shorter than the machine's drift", slice)
	case rounds < 1:
		return fmt.Errorf("-rounds %d: want at least 1", rounds)
	case workers < 1:
		return fmt.Errorf("-workers %d: want at least 1", workers)
	case database != "sqlite" && database != "postgres":
		return fmt.Errorf("-database %q: want sqlite or postgres", database)
	}
	return nil
}
