package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Metrics are the runner's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
	failures *prometheus.CounterVec
	runTime  *prometheus.HistogramVec
}

// StatsSource reports the queue's pending work, read at scrape time.
type StatsSource interface {
	JobStats(ctx context.Context, now time.Time) ([]jobs.Stat, error)
}

// NewMetrics registers the runner's metrics, and the queue depth and age
// of the oldest ready job per kind when stats is not nil.
func NewMetrics(reg prometheus.Registerer, stats StatsSource, now func() time.Time) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_jobs_attempts_total", Help: "Job attempts started, by kind.",
		}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_jobs_failures_total", Help: "Failed job attempts, by kind and outcome (retry or dead).",
		}, []string{"kind", "outcome"}),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_jobs_run_seconds", Help: "Time handlers took, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"kind"}),
	}
	reg.MustRegister(m.attempts, m.failures, m.runTime)
	if stats != nil {
		if now == nil {
			now = time.Now
		}
		reg.MustRegister(&queueCollector{stats: stats, now: now})
	}
	return m
}

func (m *Metrics) observe(kind string, took time.Duration, _ error) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(kind).Inc()
	m.runTime.WithLabelValues(kind).Observe(took.Seconds())
}

func (m *Metrics) outcome(kind, outcome string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(kind, outcome).Inc()
}

var (
	depthDesc = prometheus.NewDesc("switchboard_jobs_queued", "Jobs waiting, by kind and state (ready, scheduled, running).", []string{"kind", "state"}, nil)
	ageDesc   = prometheus.NewDesc("switchboard_jobs_oldest_ready_seconds", "How long the longest-waiting due job has waited, by kind.", []string{"kind"}, nil)
)

// queueCollector reads the queue's depth when scraped.
type queueCollector struct {
	stats StatsSource
	now   func() time.Time
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- ageDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now := c.now()
	stats, err := c.stats.JobStats(ctx, now)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(depthDesc, err)
		return
	}
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(s.Ready), s.Kind, "ready")
		ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(s.Scheduled), s.Kind, "scheduled")
		ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(s.Running), s.Kind, "running")
		age := 0.0
		if !s.OldestReady.IsZero() {
			age = max(now.Sub(s.OldestReady).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, age, s.Kind)
	}
}
