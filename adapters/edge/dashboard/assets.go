package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// assetFiles are the console's scripts, styles and images: everything
// the pages load, embedded, nothing from another host.
//
//go:embed assets
var assetFiles embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	gzipped     []byte // nil when compression does not pay
	contentType string
	// version is a short hash of the content: the ?v= of the URLs the
	// pages link (assetURL), which may be cached for good.
	version string
	etag    string
}

// assetServer serves the embedded files at /dashboard/assets/<name>: with
// an ETag (a hash of the content) for revalidation, cached for a year
// when the URL names the content's version (?v=, as the pages link them),
// and gzipped for clients that take it.
type assetServer struct {
	files map[string]*asset
}

// contentTypes fixes the types of the files a console ships, whatever
// the system's MIME tables say.
var contentTypes = map[string]string{
	".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8", ".map": "application/json; charset=utf-8",
	".json": "application/json; charset=utf-8", ".svg": "image/svg+xml",
	".png": "image/png", ".ico": "image/x-icon", ".webp": "image/webp",
	".woff2": "font/woff2", ".txt": "text/plain; charset=utf-8",
}

// compressible are the types worth gzipping.
var compressible = map[string]bool{".js": true, ".mjs": true, ".css": true, ".map": true, ".json": true, ".svg": true, ".txt": true}

func loadAssets() (*assetServer, error) {
	s := &assetServer{files: map[string]*asset{}}
	err := fs.WalkDir(assetFiles, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assetFiles.ReadFile(name)
		if err != nil {
			return err
		}
		ext := path.Ext(name)
		typ := contentTypes[ext]
		if typ == "" {
			typ = mime.TypeByExtension(ext)
		}
		if typ == "" {
			typ = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, contentType: typ, version: hex.EncodeToString(sum[:6])}
		a.etag = `"` + hex.EncodeToString(sum[:16]) + `"`
		if compressible[ext] {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(body)
			if err := zw.Close(); err != nil {
				return err
			}
			if buf.Len() < len(body)*9/10 {
				a.gzipped = buf.Bytes()
			}
		}
		s.files[strings.TrimPrefix(name, "assets/")] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load dashboard assets: %w", err)
	}
	return s, nil
}

// url is the address pages link an asset by: its path, with its version,
// so that browsers may keep it until it changes.
func (s *assetServer) url(name string) (string, error) {
	a, ok := s.files[name]
	if !ok {
		return "", fmt.Errorf("no dashboard asset %q", name)
	}
	return Base + "assets/" + name + "?v=" + a.version, nil
}

func (s *assetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, Base+"assets/")
	a, ok := s.files[name]
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("no such asset\n"))
		return
	}
	h := w.Header()
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("Content-Type", a.contentType)
	body, etag := a.body, a.etag
	if a.gzipped != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body, etag = a.gzipped, strings.TrimSuffix(a.etag, `"`)+`-gzip"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	if noneMatch := r.Header.Get("If-None-Match"); noneMatch != "" && etagListed(noneMatch, etag) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reports whether the client takes gzip (not refused with
// q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// etagListed reports whether an If-None-Match list names etag (weakly).
func etagListed(list, etag string) bool {
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimPrefix(strings.TrimSpace(item), "W/")
		if item == "*" || item == etag {
			return true
		}
	}
	return false
}
