package graph

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
)

// playgroundFiles are GraphiQL and React (see playground/LICENSES.txt)
// and the script that starts them: the playground loads nothing from
// another host.
//
//go:embed playground
var playgroundFiles embed.FS

// playgroundPolicy lets the page run only its own scripts and talk only
// to its own origin (queries over HTTP and subscriptions over WebSocket);
// GraphiQL sets style attributes, hence the inline styles.
const playgroundPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var playgroundTemplate = template.Must(template.New("playground").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Switchboard GraphQL</title>
  <link rel="stylesheet" href="/graphql/playground/assets/graphiql.min.css">
  <link rel="stylesheet" href="/graphql/playground/assets/playground.css">
  <script src="/graphql/playground/assets/react.production.min.js" defer></script>
  <script src="/graphql/playground/assets/react-dom.production.min.js" defer></script>
  <script src="/graphql/playground/assets/graphiql.min.js" defer></script>
  <script src="/graphql/playground/assets/playground.js" defer></script>
</head>
<body>
  <div id="graphiql" data-endpoint="{{.}}">Loading…</div>
</body>
</html>
`))

func playgroundHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", playgroundPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// playgroundPage serves GraphiQL's page, which sends the headers of its
// header editor with queries and, as the connection_init payload, with
// subscriptions.
func playgroundPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		playgroundHeaders(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = playgroundTemplate.Execute(w, "/graphql")
	})
}

// playgroundAssets serves the embedded scripts and styles.
func playgroundAssets() http.Handler {
	sub, err := fs.Sub(playgroundFiles, "playground")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	files := http.StripPrefix("/graphql/playground/assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		playgroundHeaders(w)
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}
