package harness

import "testing"

func TestParseAccount(t *testing.T) {
	t.Parallel()
	for _, out := range []string{
		`{"account_id":"acc_1","api_key":"k","api_secret":"s","name":"bench"}` + "\n",
		"time=... level=WARN msg=x\n" + `{"account_id":"acc_1","api_key":"k","api_secret":"s"}` + "\n",
		"{\n  \"account_id\": \"acc_1\",\n  \"api_key\": \"k\",\n  \"api_secret\": \"s\"\n}\n",
	} {
		sb, err := parseAccount([]byte(out))
		if err != nil {
			t.Fatalf("parseAccount(%q): %v", out, err)
		}
		if sb.AccountID != "acc_1" || sb.APIKey != "k" || sb.APISecret != "s" {
			t.Errorf("parseAccount(%q) = %+v", out, sb)
		}
	}
	if _, err := parseAccount([]byte("error: no such command\n")); err == nil {
		t.Error("parseAccount without JSON succeeded")
	}
}
