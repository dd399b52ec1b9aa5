package jobs

import (
	"go.uber.org/fx"
)

// KindGroup is the fx value group feature modules add their job kinds to.
const KindGroup = `group:"job_kinds"`

// Module runs the Runner for the app's lifetime, serving every Kind in the
// "job_kinds" group. It needs a Config, a Queue and Wakeups from the app.
var Module = fx.Module("jobs",
	fx.Provide(fx.Annotate(newModuleRunner, fx.ParamTags(``, ``, ``, ``, KindGroup))),
	fx.Invoke(func(*Runner) {}),
)

func newModuleRunner(lc fx.Lifecycle, cfg Config, queue Queue, wake Wakeups, kinds []Kind) (*Runner, error) {
	r, err := New(queue, wake, cfg, kinds...)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StartStopHook(r.Start, r.Stop))
	return r, nil
}
