package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// keyed runs a call that creates work (a send, a job) at most once per
// idempotency key, with REST's Idempotency-Key machinery: the key is
// reserved in the account's key store (the same keys as REST's, so a key
// is never used for two different requests whichever interface sent
// them), the answer commits in the transaction of the work (run records
// it through its Completion), and a call with the same key and arguments
// within 24 hours answers the first result and does nothing. A refusal is
// kept as the key's answer too; a failure of the server's releases the
// key for a retry.
//
// args are the call's arguments without the key; tool and args make the
// key's fingerprint.
func keyed[T, Out any](ctx context.Context, h *Handler, accountID, tool, key string, args any, run func(*idempotency.Completion[T]) (T, error), render func(T) Out) (any, error) {
	if key == "" || h.deps.Idempotency == nil {
		v, err := run(nil)
		if err != nil {
			return nil, err
		}
		return render(v), nil
	}
	if len(key) > 255 {
		return nil, invalid("string_too_long", "idempotency_key must be at most 255 characters", "idempotency_key")
	}
	body, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("fingerprint the arguments: %w", err)
	}
	sum := sha256.Sum256(append([]byte("MCP "+tool+"\n"), body...))
	now := h.now()
	res, err := h.deps.Idempotency.ReserveKey(ctx, accountID, key, hex.EncodeToString(sum[:]), now, h.deps.IdempotencyLock)
	if err != nil {
		return nil, err
	}
	switch res.Outcome {
	case idempotency.Replay:
		if res.Response.Status != http.StatusOK {
			var answer toolError
			if err := json.Unmarshal(res.Response.Body, &answer); err != nil {
				return nil, fmt.Errorf("read the answer kept for an idempotency key: %w", err)
			}
			return nil, &storedError{answer: answer}
		}
		return json.RawMessage(res.Response.Body), nil
	case idempotency.Mismatch:
		return nil, failure.Conflict("idempotency_key_reused", "this idempotency_key was used with different arguments")
	case idempotency.InFlight:
		return nil, &failure.Error{Kind: failure.KindConflict, Code: "idempotency_key_in_use",
			Message:    "a call with this idempotency_key is still being processed",
			RetryAfter: max(time.Second, res.LockedUntil.Sub(now))}
	}
	v, err := run(&idempotency.Completion[T]{AccountID: accountID, Key: key, Render: func(v T) idempotency.Response {
		body, err := json.Marshal(render(v))
		if err != nil {
			return idempotency.Response{Status: http.StatusInternalServerError}
		}
		return idempotency.Response{Status: http.StatusOK, Body: body}
	}})
	if err == nil {
		return render(v), nil // its answer committed with the work
	}
	switch failure.As(err).Kind {
	case failure.KindInternal, failure.KindUnavailable:
		// Nothing may have happened, or the work committed with its answer
		// and the reply was lost: releasing never discards an answer, so a
		// retry either replays it or runs again. The call's deadline may
		// have passed; the release gets a second of its own.
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if rerr := h.deps.Idempotency.ReleaseKey(release, accountID, key); rerr != nil && !failure.Is(rerr, failure.KindUnavailable) {
			h.log.WarnContext(ctx, "release idempotency key", "error", rerr.Error())
		}
	default:
		// A refusal did no work: it is the key's answer.
		answer, _ := json.Marshal(h.toolErrorOf(ctx, err))
		if cerr := h.deps.Idempotency.CompleteKey(ctx, accountID, key, idempotency.Response{Status: http.StatusBadRequest, Body: answer}); cerr != nil {
			h.log.WarnContext(ctx, "store idempotent answer", "error", cerr.Error())
		}
	}
	return nil, err
}

// storedError is a refusal kept for an idempotency key, answered again
// as it was.
type storedError struct{ answer toolError }

func (e *storedError) Error() string { return e.answer.Code + ": " + e.answer.Message }
