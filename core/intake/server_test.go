package intake

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
)

func TestServer_RefusesAttacks(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.branchProposal(t, "agent-a")
	if _, err := e.client.SubmitProposal(t.Context(), "agent-a", p); err != nil {
		t.Fatal(err)
	}
	addr := e.srv.Addr()
	get := "GET /v1/proposals/" + p.ID + " HTTP/1.1\r\n"
	cases := []struct {
		name    string
		request string
		status  int
		code    errcode.Code
	}{
		{"no token", get + "Host: " + addr + "\r\nX-Sluice-Agent: agent-a\r\n\r\n", 401, errcode.Unauthorized},
		{"wrong token", get + "Host: " + addr + "\r\nAuthorization: Bearer " + strings.Repeat("0", 64) + "\r\n\r\n", 401, errcode.Unauthorized},
		{"basic auth", get + "Host: " + addr + "\r\nAuthorization: Basic " + e.token + "\r\n\r\n", 401, errcode.Unauthorized},
		{"foreign host", get + "Host: evil.example:80\r\nAuthorization: Bearer " + e.token + "\r\n\r\n", 403, errcode.Forbidden},
		{"localhost host", get + "Host: localhost:" + strings.Split(addr, ":")[1] + "\r\nAuthorization: Bearer " + e.token + "\r\n\r\n", 403, errcode.Forbidden},
		{"browser origin", e.req("GET", "/v1/proposals/"+p.ID, "Origin: http://evil.example"), 403, errcode.Forbidden},
		{"null origin", e.req("GET", "/v1/proposals/"+p.ID, "Origin: null"), 403, errcode.Forbidden},
		{"fetch metadata", e.req("GET", "/v1/proposals/"+p.ID, "Sec-Fetch-Site: cross-site"), 403, errcode.Forbidden},
		{"oversized body", e.req("POST", "/v1/proposals", fmt.Sprintf("Content-Length: %d", gateway.MaxBodyBytes+1)), 413, errcode.TooLarge},
		{"dot-dot id", e.req("GET", "/v1/proposals/../x"), 400, errcode.InvalidArgument},
		{"encoded dot-dot id", e.req("GET", "/v1/proposals/..%2Fx"), 400, errcode.InvalidArgument},
		{"encoded slash", e.req("GET", "/v1/proposals/a%2Fb"), 400, errcode.InvalidArgument},
		{"encoded question mark", e.req("GET", "/v1/proposals/a%3Fb"), 400, errcode.InvalidArgument},
		{"encoded space", e.req("GET", "/v1/proposals/a%20b"), 400, errcode.InvalidArgument},
		{"dot id", e.req("GET", "/v1/proposals/%2e%2e"), 400, errcode.InvalidArgument},
		{"id too long", e.req("GET", "/v1/proposals/"+strings.Repeat("a", 129)), 400, errcode.InvalidArgument},
		{"cancel with bad id", e.req("POST", "/v1/proposals/a%2Fb/cancel", "Content-Length: 0"), 400, errcode.InvalidArgument},
		{"wait with bad id", e.req("GET", "/v1/proposals/a%20b/wait"), 400, errcode.InvalidArgument},
		{"double slash", e.req("GET", "/v1//proposals/"+p.ID), 400, errcode.InvalidArgument},
		{"no agent", strings.Replace(e.req("GET", "/v1/proposals/"+p.ID), "X-Sluice-Agent: agent-a\r\n", "", 1), 400, errcode.InvalidArgument},
		{"bad agent", strings.Replace(e.req("GET", "/v1/proposals/"+p.ID), "agent-a", "agent a/b", 1), 400, errcode.InvalidArgument},
		{"unknown route", e.req("GET", "/v1/secrets"), 404, errcode.NotFound},
		{"bad wait timeout", e.req("GET", "/v1/proposals/"+p.ID+"/wait?timeout=soon"), 400, errcode.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := raw(t, addr, c.request)
			var eb gateway.ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("status %d, body is not the JSON error shape: %q", status, body)
			}
			if status != c.status || eb.Error.Code != c.code {
				t.Fatalf("got %d %s (%s), want %d %s", status, eb.Error.Code, eb.Error.Message, c.status, c.code)
			}
		})
	}
}

func TestServer_OversizedChunkedBody(t *testing.T) {
	e := newEnv(t, envOptions{})
	// No Content-Length: the cap has to hold while the body streams in,
	// on every route that takes a body.
	for _, path := range []string{"/v1/proposals", "/v1/workspaces/w1/handoff"} {
		chunk := strings.Repeat("x", 1<<20)
		var b strings.Builder
		b.WriteString(e.req("POST", path, "Transfer-Encoding: chunked", "Content-Type: application/json"))
		b.WriteString(fmt.Sprintf("%x\r\n\"", len(chunk)+1) + chunk + "\r\n")
		for range 10 {
			b.WriteString(fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk))
		}
		b.WriteString("0\r\n\r\n")
		status, body := raw(t, e.srv.Addr(), b.String())
		if status != 413 || !strings.Contains(body, string(errcode.TooLarge)) {
			t.Errorf("%s: got %d %s, want 413 too_large", path, status, body)
		}
	}
}
