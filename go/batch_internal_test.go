package mooncakemeta

import (
	"errors"
	"testing"
)

// A failed batch call whose statuses name no failing key (the library
// refused the batch as a whole without writing a failure into them) fails
// every key with the call's error; statuses that name failures keep their
// own per key.
func TestKeyErrorsNeverReadAFailedCallAsSuccess(t *testing.T) {
	keys := []string{"a", "b"}
	summary := &Error{Code: CodePanic, Message: "panicked"}
	errs := keyErrors(keys, []int32{0, 0}, summary)
	for i, e := range errs {
		if !errors.Is(e, ErrPanic) {
			t.Fatalf("key %d of a failed call with OK statuses: %v", i, e)
		}
	}
	if err := summarise(summary, errs); !errors.Is(err, ErrPanic) {
		t.Fatalf("summarise = %v", err)
	}
	errs = keyErrors(keys, []int32{0, int32(CodeObjectNotFound)}, &Error{Code: CodeObjectNotFound})
	if errs[0] != nil || !errors.Is(errs[1], ErrNotFound) {
		t.Fatalf("per-key failures: %v", errs)
	}
	if errs := keyErrors(keys, []int32{0, 0}, nil); errs[0] != nil || errs[1] != nil {
		t.Fatalf("a successful call: %v", errs)
	}
	if err := summarise(nil, []error{nil, ErrNotFound}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("summarise of retried keys = %v", err)
	}
}
