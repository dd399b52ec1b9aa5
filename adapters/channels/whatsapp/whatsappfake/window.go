package whatsappfake

import (
	"encoding/json"
	"strconv"
	"time"
)

// sentNow is the timestamp of an inbound message a notification carries:
// the time it is built, as the Cloud API stamps a message with when the
// user sent it (Unix seconds, as a string).
func sentNow() string { return strconv.FormatInt(time.Now().Unix(), 10) }

// SentAt is the notification with the timestamp of each of its messages
// set to at: messages the user sent then (a delivery the Cloud API made
// late, or one older than the customer service window).
func SentAt(notification []byte, at time.Time) []byte {
	var n map[string]any
	if err := json.Unmarshal(notification, &n); err != nil {
		panic(err)
	}
	entries, _ := n["entry"].([]any)
	for _, e := range entries {
		changes, _ := e.(map[string]any)["changes"].([]any)
		for _, c := range changes {
			value, _ := c.(map[string]any)["value"].(map[string]any)
			messages, _ := value["messages"].([]any)
			for _, m := range messages {
				m.(map[string]any)["timestamp"] = strconv.FormatInt(at.Unix(), 10)
			}
		}
	}
	out, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	return out
}
