// Command emailcpu splits the CPU an accepted email costs between the server,
// Postgres and the load generator, for several builds side by side: where
// emails-send's ratio says how much slower a build is, this says which part
// grew. Each build gets a deployment of its own (as emails-send does: an
// API-only server, a pool of 10, 64 lean clients); the builds then take turns
// in 4-second slices, and the CPU each slice used, read from /proc, is divided
// by the emails it accepted.
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go run ./bench/emailcpu -rounds 8 sw-a sw-b
//
// -flags and -sql change one build's deployment, to measure what a feature
// costs: "-flags 1='--request-timeout 0'" starts the second build's server
// without request deadlines, "-sql 1='DROP INDEX emails_mailbox_idx'" runs SQL
// on its database once it is migrated.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/bench/email"
	"github.com/switchboard-dev/switchboard/bench/harness"
)

// build is one binary under measurement and what its slices added up to.
type build struct {
	bin  string
	sb   *harness.Switchboard
	load *harness.HTTPLoad
	ops  int
	took time.Duration
	cpu  harness.CPUUse
}

// perBuild is a flag given as N=value for the N-th build (from 0).
type perBuild map[int]string

func (p perBuild) String() string { return fmt.Sprint(map[int]string(p)) }

func (p perBuild) Set(s string) error {
	n, v, ok := strings.Cut(s, "=")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 {
		return fmt.Errorf("want N=value, N the build's position from 0: %q", s)
	}
	p[i] = v
	return nil
}

func main() {
	rounds := flag.Int("rounds", 8, "slices per build")
	slice := flag.Duration("slice", 4*time.Second, "length of a slice")
	flags, sql := perBuild{}, perBuild{}
	flag.Var(flags, "flags", "N=FLAGS: more serve flags for the N-th build (repeatable)")
	flag.Var(sql, "sql", "N=SQL: SQL run on the N-th build's database after migrating (repeatable)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: emailcpu [-rounds N] [-flags N=...] [-sql N=...] BINARY...")
		os.Exit(2)
	}
	if err := run(flag.Args(), *rounds, *slice, flags, sql); err != nil {
		fmt.Fprintln(os.Stderr, "emailcpu:", err)
		os.Exit(1)
	}
}

func run(bins []string, rounds int, slice time.Duration, flags, sql perBuild) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	var builds []*build
	for i, bin := range bins {
		env, err := harness.NewEnv(root, log)
		if err != nil {
			return err
		}
		defer env.Close()
		env.Database, env.SwitchboardBin = "postgres", bin
		env.PostgresAdminURL = os.Getenv("DATABASE_URL")
		b, err := deploy(ctx, env, bin, strings.Fields(flags[i]), sql[i])
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		builds = append(builds, b)
	}
	for _, b := range builds { // warm up: pools, plans, caches
		if _, err := b.load.Run(ctx, slice/2); err != nil {
			return err
		}
	}
	for range rounds {
		for _, b := range builds {
			if err := b.measure(ctx, slice); err != nil {
				return err
			}
		}
	}
	fmt.Println("build                  emails/s  CPU per email (us): server  postgres  load generator  whole machine")
	for _, b := range builds {
		n, us := float64(b.ops), func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
		fmt.Printf("%-22s %8.0f  %26.1f  %8.1f  %14.1f  %13.1f\n", b.bin, n/b.took.Seconds(),
			us(b.cpu.Server)/n, us(b.cpu.Postgres)/n, us(b.cpu.LoadGen)/n, us(b.cpu.Machine)/n)
	}
	return nil
}

// deploy starts bin as emails-send does, with extra flags, and runs sql on its
// migrated database.
func deploy(ctx context.Context, env *harness.Env, bin string, extra []string, sql string) (*build, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	if sql != "" {
		db, err := d.SQL()
		if err != nil {
			return nil, err
		}
		if err := db.Exec(ctx, sql); err != nil {
			return nil, err
		}
	}
	sb, err := d.Serve(ctx, append(append(email.Flags(), "--db-max-conns", "10", "--jobs=false"), extra...)...)
	if err != nil {
		return nil, err
	}
	if err := email.CreateAddress(ctx, sb); err != nil {
		return nil, err
	}
	load, err := email.NewSendLoad(sb, 64)
	if err != nil {
		return nil, err
	}
	return &build{bin: bin, sb: sb, load: load}, nil
}

// measure runs one slice against b and adds what it used.
func (b *build) measure(ctx context.Context, slice time.Duration) error {
	meter, err := harness.StartCPUMeter(b.sb.PID())
	if err != nil {
		return err
	}
	sample, err := b.load.Run(ctx, slice)
	if err != nil {
		return err
	}
	if sample.Failed > 0 {
		return fmt.Errorf("%s: %d sends failed: %s", b.bin, sample.Failed, sample.FirstFailure)
	}
	used, err := meter.Stop()
	if err != nil {
		return err
	}
	b.ops, b.took, b.cpu = b.ops+sample.Ops, b.took+sample.Elapsed, b.cpu.Add(used)
	return nil
}
