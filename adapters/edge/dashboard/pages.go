package dashboard

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

//go:embed templates
var templateFiles embed.FS

// templates are the pages, parsed once.
type templates struct {
	shell, signIn, errorPage *template.Template
}

func parseTemplates(assets *assetServer) (*templates, error) {
	funcs := template.FuncMap{"asset": assets.url}
	parse := func(page string) (*template.Template, error) {
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/base.html", "templates/"+page)
		if err != nil {
			return nil, fmt.Errorf("parse dashboard template %s: %w", page, err)
		}
		return t, nil
	}
	var out templates
	var err error
	if out.shell, err = parse("shell.html"); err != nil {
		return nil, err
	}
	if out.signIn, err = parse("sign-in.html"); err != nil {
		return nil, err
	}
	if out.errorPage, err = parse("error.html"); err != nil {
		return nil, err
	}
	// Render each once now, so that a template naming a missing asset
	// fails start-up, not the first request.
	for _, check := range []struct {
		t    *template.Template
		data any
	}{{out.shell, shellData{Page: "overview"}}, {out.signIn, signInData{}}, {out.errorPage, errorData{}}} {
		if err := check.t.Execute(&bytes.Buffer{}, check.data); err != nil {
			return nil, fmt.Errorf("render dashboard template %s: %w", check.t.Name(), err)
		}
	}
	return &out, nil
}

// A page of the console: the shell serves each at /dashboard/<path> and
// every path below it (/dashboard/threads/thr_…), for the script to
// route.
type page struct {
	path, label string
}

// pages are the console's pages, in the navigation's order.
var pages = []page{
	{"", "Overview"},
	{"threads", "Threads"},
	{"webhook", "Webhook"},
	{"cron", "Cron"},
	{"email", "Email"},
}

// pageOf finds the page a path below /dashboard/ shows.
func pageOf(urlPath string) (page, bool) {
	rest, ok := strings.CutPrefix(urlPath, Base)
	if !ok {
		return page{}, false
	}
	first, _, _ := strings.Cut(rest, "/")
	for _, p := range pages {
		if p.path == first {
			return p, true
		}
	}
	return page{}, false
}

type navItem struct {
	Href, Label string
	Current     bool
}

type shellData struct {
	Title, Page            string
	AccountID, AccountName string
	CSRF                   string
	Nav                    []navItem
}

type signInData struct {
	Error, Key, Next string
}

type errorData struct {
	Title, Message string
}

// render writes a page with status; HTML is never cached (secure).
func (h *handler) render(w http.ResponseWriter, r *http.Request, t *template.Template, status int, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		h.deps.Logger.ErrorContext(r.Context(), "render dashboard page", "page", t.Name(), "error", err.Error())
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	h.render(w, r, h.pages.errorPage, status, errorData{Title: http.StatusText(status), Message: message})
}

// sessionToken is the session cookie's token, or "".
func sessionToken(r *http.Request) string {
	c, err := r.Cookie(edge.SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// shell serves the console's pages to a signed-in browser, and sends any
// other to sign in first.
func (h *handler) shell(w http.ResponseWriter, r *http.Request) {
	current, ok := pageOf(r.URL.Path)
	if !ok {
		h.errorPage(w, r, http.StatusNotFound, "There is no such page in the dashboard.")
		return
	}
	token := sessionToken(r)
	if token == "" {
		h.toSignIn(w, r)
		return
	}
	p, err := h.deps.Sessions.Resume(r.Context(), token)
	if failure.Is(err, failure.KindUnauthenticated) {
		h.toSignIn(w, r)
		return
	}
	if err != nil {
		h.failed(w, r, err)
		return
	}
	a, err := h.deps.Accounts.Account(r.Context(), p.AccountID)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	data := shellData{
		Title: current.label, Page: cmp.Or(current.path, "overview"),
		AccountID: a.ID, AccountName: a.Name, CSRF: h.deps.CSRF.Token(token),
	}
	for _, pg := range pages {
		data.Nav = append(data.Nav, navItem{Href: Base + pg.path, Label: pg.label, Current: pg == current})
	}
	h.render(w, r, h.pages.shell, http.StatusOK, data)
}

// toSignIn sends the browser to sign in, and back to where it was going
// afterwards.
func (h *handler) toSignIn(w http.ResponseWriter, r *http.Request) {
	target := Base + "sign-in"
	if r.URL.Path != Base {
		target += "?next=" + url.QueryEscape(r.URL.Path)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// nextPage is where to go after sign-in: a console page named by next,
// or the overview. Anything else (another host, another path) is ignored,
// so that the sign-in page redirects nowhere else.
func nextPage(next string) string {
	if _, ok := pageOf(next); !ok || strings.ContainsAny(next, "\\?#") || strings.Contains(next, "//") || strings.Contains(next, "/.") {
		return Base
	}
	return next
}

// failed answers an error other than a refused session: the database
// away (503, the page says so) or a bug (500, logged).
func (h *handler) failed(w http.ResponseWriter, r *http.Request, err error) {
	fe := failure.As(err)
	if fe.Kind == failure.KindUnavailable {
		w.Header().Set("Retry-After", "1")
		h.errorPage(w, r, http.StatusServiceUnavailable, "Switchboard cannot reach its database right now. Try again in a moment.")
		return
	}
	h.deps.Logger.ErrorContext(r.Context(), "dashboard request failed", "path", r.URL.Path, "error", err.Error())
	h.errorPage(w, r, http.StatusInternalServerError, "Something went wrong on the server.")
}

// signInPage shows the sign-in form, or the console to a browser signed
// in already.
func (h *handler) signInPage(w http.ResponseWriter, r *http.Request) {
	next := nextPage(r.URL.Query().Get("next"))
	if token := sessionToken(r); token != "" {
		if _, err := h.deps.Sessions.Resume(r.Context(), token); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
	}
	h.render(w, r, h.pages.signIn, http.StatusOK, signInData{Next: keepNext(next)})
}

// keepNext is the next page the sign-in form carries: none for the
// overview.
func keepNext(next string) string {
	if next == Base {
		return ""
	}
	return next
}

// signIn checks the posted API key and secret as the APIs do: a wrong
// pair counts against the client address's budget of failed
// authentications (shared with the APIs, and with every replica), and
// past the budget even the right pair is refused until it refills. The
// right pair starts a session: its token goes into an HttpOnly cookie
// (SameSite=Lax, Secure over TLS, Path=/ so that /v1 and /graphql get it
// too).
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	if !fromOwnOrigin(r) {
		h.errorPage(w, r, http.StatusForbidden, "Sign in from the dashboard's own sign-in page.")
		return
	}
	if !h.parseForm(w, r) {
		return
	}
	key, secret := strings.TrimSpace(r.PostForm.Get("api_key")), strings.TrimSpace(r.PostForm.Get("api_secret"))
	next := nextPage(r.PostForm.Get("next"))
	form := signInData{Key: key, Next: keepNext(next)}
	var done func(failed bool)
	if h.deps.AuthFailures != nil {
		attempt, finish := h.deps.AuthFailures.Attempt(r.Context(), clientAddress(r))
		if !attempt.Admitted() {
			wait := int(math.Ceil(attempt.RetryAfter.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			form.Error = fmt.Sprintf("Too many failed sign-ins from your address. Try again in %d seconds.", wait)
			h.render(w, r, h.pages.signIn, http.StatusTooManyRequests, form)
			return
		}
		done = finish
	}
	issued, err := h.deps.Sessions.SignIn(r.Context(), key, secret)
	if done != nil {
		done(failure.Is(err, failure.KindUnauthenticated))
	}
	switch {
	case failure.Is(err, failure.KindUnauthenticated):
		form.Error = "The API key or secret is wrong, or the key was revoked."
		h.render(w, r, h.pages.signIn, http.StatusUnauthorized, form)
		return
	case failure.Is(err, failure.KindUnavailable):
		w.Header().Set("Retry-After", "1")
		form.Error = "Switchboard cannot reach its database right now. Try again in a moment."
		h.render(w, r, h.pages.signIn, http.StatusServiceUnavailable, form)
		return
	case err != nil:
		h.failed(w, r, err)
		return
	}
	if previous := sessionToken(r); previous != "" {
		// A browser signing in again leaves no session of the one
		// before behind (a session's token is never reused).
		if err := h.deps.Sessions.SignOut(r.Context(), previous); err != nil {
			h.deps.Logger.WarnContext(r.Context(), "end the previous dashboard session", "error", err.Error())
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: edge.SessionCookie, Value: issued.Token, Path: "/",
		MaxAge:   int(issued.Ends.Sub(issued.Session.CreatedAt).Seconds()),
		HttpOnly: true, Secure: h.overTLS(r), SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// maxFormBytes bounds a posted form: the dashboard's are a few hundred
// bytes.
const maxFormBytes = 16 << 10

// parseForm reads a posted form of at most maxFormBytes, or answers 413
// or 400 and returns false.
func (h *handler) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.errorPage(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
			return false
		}
		h.errorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	return true
}

// signOut ends the browser's session and forgets its cookie. The form
// must carry the session's CSRF token (or the X-CSRF-Token header), so
// that no other site can sign a browser out.
func (h *handler) signOut(w http.ResponseWriter, r *http.Request) {
	if !fromOwnOrigin(r) {
		h.errorPage(w, r, http.StatusForbidden, "Sign out from the dashboard's own pages.")
		return
	}
	if token := sessionToken(r); token != "" {
		presented := r.Header.Get(edge.CSRFHeader)
		if presented == "" {
			if !h.parseForm(w, r) {
				return
			}
			presented = r.PostForm.Get(edge.CSRFField)
		}
		if !h.deps.CSRF.Check(token, presented) {
			h.errorPage(w, r, http.StatusForbidden, "The sign-out form is out of date; reload the page and try again.")
			return
		}
		if err := h.deps.Sessions.SignOut(r.Context(), token); err != nil {
			h.failed(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: edge.SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: h.overTLS(r), SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, Base+"sign-in", http.StatusSeeOther)
}
