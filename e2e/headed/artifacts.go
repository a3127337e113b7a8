package headed

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// artifactRoot is the directory of this test binary's artifacts, chosen
// once: $CDPGUARD_ARTIFACT_DIR, or a new temporary directory (kept after
// the run, so a failed test's pictures can be looked at).
var artifactRoot = sync.OnceValues(func() (string, error) {
	if d := os.Getenv("CDPGUARD_ARTIFACT_DIR"); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	return os.MkdirTemp("", "cdpguard-artifacts-")
})

// SaveArtifact writes data as file name in t's artifact directory
// (<root>/<test name>/) and logs the path.
func SaveArtifact(t testing.TB, name string, data []byte) string {
	t.Helper()
	root, err := artifactRoot()
	if err != nil {
		t.Fatalf("headed: artifact dir: %v", err)
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("headed: artifact dir: %v", err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatalf("headed: save artifact: %v", err)
	}
	t.Logf("artifact: %s", p)
	return p
}

// PageScreenshot captures session's page (Page.captureScreenshot, PNG) on c.
func PageScreenshot(ctx context.Context, c *cdptest.Client, session string) ([]byte, error) {
	v, err := c.Call(ctx, session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("Page.captureScreenshot: %w", err)
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Screenshot returns the whole X screen as PNG: the browser window with its
// tab strip and toolbar, as the human sees it. Xvfb keeps the screen as an
// XWD file (-fbdir); this reads it.
func (d *Display) Screenshot() ([]byte, error) {
	raw, err := os.ReadFile(d.screenFile())
	if err != nil {
		return nil, fmt.Errorf("read Xvfb screen: %w", err)
	}
	img, err := decodeXWD(raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeXWD decodes the 32-bit TrueColor ZPixmap XWD image Xvfb writes
// (X11 XWDFile.h: a header of 25 big-endian CARD32 fields and the window
// name, ncolors 12-byte colour entries, then the pixels).
func decodeXWD(b []byte) (image.Image, error) {
	const fields = 25
	if len(b) < fields*4 {
		return nil, errors.New("xwd: short header")
	}
	f := func(i int) uint32 { return binary.BigEndian.Uint32(b[i*4:]) }
	hdr, format, w, h := f(0), f(2), int(f(4)), int(f(5))
	order, bpp, stride := f(7), f(11), int(f(12))
	rm, gm, bm, ncolors := f(14), f(15), f(16), int(f(19))
	if f(1) != 7 || format != 2 || bpp != 32 || rm == 0 || gm == 0 || bm == 0 {
		return nil, fmt.Errorf("xwd: unsupported image (version %d, format %d, %d bits per pixel)", f(1), format, bpp)
	}
	off := int(hdr) + ncolors*12
	if w <= 0 || h <= 0 || stride < w*4 || off < 0 || len(b) < off+h*stride {
		return nil, errors.New("xwd: truncated image")
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	ch := func(px, mask uint32) uint8 { return uint8((px & mask) >> bits.TrailingZeros32(mask)) }
	for y := range h {
		row := b[off+y*stride:]
		for x := range w {
			var px uint32
			if order == 0 {
				px = binary.LittleEndian.Uint32(row[x*4:])
			} else {
				px = binary.BigEndian.Uint32(row[x*4:])
			}
			img.SetRGBA(x, y, color.RGBA{ch(px, rm), ch(px, gm), ch(px, bm), 0xff})
		}
	}
	return img, nil
}

// UpdateDocs writes png as docs/<name> in the repository when
// CDPGUARD_UPDATE_DOCS=1 (a README image refreshed by a real run), and
// does nothing otherwise.
func UpdateDocs(t testing.TB, name string, png []byte) {
	t.Helper()
	if os.Getenv("CDPGUARD_UPDATE_DOCS") != "1" {
		return
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("headed: %v", err)
	}
	p := filepath.Join(root, "docs", name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("headed: update docs: %v", err)
	}
	t.Logf("docs image updated: %s", p)
}

// repoRoot is the nearest directory upwards from the working directory
// that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
