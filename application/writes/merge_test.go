package writes

import (
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"reflect"
	"testing"
)

// Merge and Add keep every list of a batch: a list either leaves out is
// writes lost. Each list of Batch is filled in both batches, so a new list
// neither knows fails here.
func TestMergeKeepsEveryList(t *testing.T) {
	one := func() Batch {
		var b Batch
		v := reflect.ValueOf(&b).Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() != reflect.Slice {
				t.Fatalf("Batch.%s is not a list: Merge and Add know lists only", v.Type().Field(i).Name)
			}
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
		return b
	}
	merged := Merge([]Batch{one(), {}, one()})
	var added Batch
	added.Add(one())
	added.Add(Batch{})
	added.Add(one())
	mv, av := reflect.ValueOf(merged), reflect.ValueOf(added)
	for i := range mv.NumField() {
		name := mv.Type().Field(i).Name
		if mv.Field(i).Len() != 2 {
			t.Errorf("Merge keeps %d of Batch.%s, want 2", mv.Field(i).Len(), name)
		}
		if av.Field(i).Len() != 2 {
			t.Errorf("Add keeps %d of Batch.%s, want 2", av.Field(i).Len(), name)
		}
	}
	if !reflect.DeepEqual(merged, added) {
		t.Error("Merge and Add differ")
	}
	if empty := Merge([]Batch{{}, {}}); !reflect.DeepEqual(empty, Batch{}) {
		t.Errorf("Merge of empty batches = %+v, want the empty batch", empty)
	}
}

// BenchmarkMergeSends measures merging what 32 sends commit together.
func BenchmarkMergeSends(b *testing.B) {
	bs := make([]Batch, 32)
	for i := range bs {
		bs[i] = Batch{Messages: make([]messaging.Message, 1), ThreadActivity: make([]ThreadActivity, 1),
			Events: make([]event.Event, 1), Jobs: make([]jobs.EnqueueParams, 1)}
	}
	b.ReportAllocs()
	for b.Loop() {
		Merge(bs)
	}
}
