package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// argumentWords are how MCP names the key and a call in the refusals of
// the idempotency protocol.
var argumentWords = edge.KeyWords{In: "body", Name: "idempotency_key", Request: "call", Different: "different arguments"}

// keyed runs a call that creates work (a send, a job) at most once per
// idempotency key, with the edge's protocol (edge.Idempotency): the key is
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
	fingerprint := ""
	if key != "" && len(key) <= edge.MaxIdempotencyKey {
		body, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("fingerprint the arguments: %w", err)
		}
		fingerprint = edge.Fingerprint("MCP "+tool, body)
	}
	held, replay, err := h.keys.Begin(ctx, argumentWords, accountID, key, fingerprint)
	if err != nil {
		return nil, err
	}
	if replay != nil {
		if replay.Status != http.StatusOK {
			var answer toolError
			if err := json.Unmarshal(replay.Body, &answer); err != nil {
				return nil, fmt.Errorf("read the answer kept for an idempotency key: %w", err)
			}
			return nil, &storedError{answer: answer}
		}
		return json.RawMessage(replay.Body), nil
	}
	v, err := run(edge.AnswerWith(held, func(v T) idempotency.Response {
		body, err := json.Marshal(render(v))
		if err != nil {
			return idempotency.Response{Status: http.StatusInternalServerError}
		}
		return idempotency.Response{Status: http.StatusOK, Body: body}
	}))
	if err == nil {
		held.Finish(ctx, edge.AnsweredWithWork, idempotency.Response{})
		return render(v), nil
	}
	switch failure.As(err).Kind {
	case failure.KindInternal, failure.KindUnavailable:
		// Nothing may have happened, or the work committed with its answer
		// and the reply was lost: releasing never discards an answer, so a
		// retry either replays it or runs again.
		held.Finish(ctx, edge.ServerFailed, idempotency.Response{})
	default:
		// A refusal did no work: it is the key's answer.
		answer, _ := json.Marshal(h.toolErrorOf(ctx, err))
		held.Finish(ctx, edge.Answered, idempotency.Response{Status: http.StatusBadRequest, Body: answer})
	}
	return nil, err
}

// storedError is a refusal kept for an idempotency key, answered again
// as it was.
type storedError struct{ answer toolError }

func (e *storedError) Error() string { return e.answer.Code + ": " + e.answer.Message }
