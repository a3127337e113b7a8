package headed

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestDecodeXWD decodes a 2x1 image in the layout Xvfb writes: 32 bits per
// pixel, LSB first, 8-bit masks, one colour entry to skip.
func TestDecodeXWD(t *testing.T) {
	var b bytes.Buffer
	name := []byte("s\x00\x00\x00")
	hdr := make([]uint32, 25)
	hdr[0] = uint32(25*4 + len(name))
	hdr[1], hdr[2], hdr[3], hdr[4], hdr[5] = 7, 2, 24, 2, 1
	hdr[7], hdr[11], hdr[12] = 0, 32, 8
	hdr[14], hdr[15], hdr[16], hdr[19] = 0xff0000, 0x00ff00, 0x0000ff, 1
	for _, v := range hdr {
		_ = binary.Write(&b, binary.BigEndian, v)
	}
	b.Write(name)
	b.Write(make([]byte, 12)) // the colour entry
	_ = binary.Write(&b, binary.LittleEndian, uint32(0x00ff8001))
	_ = binary.Write(&b, binary.LittleEndian, uint32(0x000000ff))
	img, err := decodeXWD(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if r, g, bl, _ := img.At(0, 0).RGBA(); r>>8 != 0xff || g>>8 != 0x80 || bl>>8 != 0x01 {
		t.Errorf("pixel 0 = %x %x %x, want ff 80 01", r>>8, g>>8, bl>>8)
	}
	if r, g, bl, _ := img.At(1, 0).RGBA(); r != 0 || g != 0 || bl>>8 != 0xff {
		t.Errorf("pixel 1 = %x %x %x, want blue", r>>8, g>>8, bl>>8)
	}
	if _, err := decodeXWD(b.Bytes()[:b.Len()-1]); err == nil {
		t.Error("a truncated image decoded")
	}
}

// TestFindInShadowAndFrames matches nodes inside a closed shadow root and an
// iframe's document, as DOM.getDocument with pierce returns them.
func TestFindInShadowAndFrames(t *testing.T) {
	text := func(s string) *Node { return &Node{NodeName: "#text", NodeValue: s} }
	button := &Node{LocalName: "button", BackendNodeID: 7, Attributes: []string{"id", "allow"}, Children: []*Node{text("Allow evil.test")}}
	root := &Node{LocalName: "html", Children: []*Node{
		{LocalName: "div", ShadowRoots: []*Node{{ShadowRootType: "closed", Children: []*Node{button}}}},
		{LocalName: "iframe", ContentDocument: &Node{Children: []*Node{{LocalName: "button", BackendNodeID: 9, Children: []*Node{text("in frame")}}}}},
	}}
	if n := root.walk(ByID("allow")); n != button {
		t.Errorf("ByID: got %+v", n)
	}
	if n := root.walk(ByTag("button", "evil.test")); n != button {
		t.Errorf("ByTag in shadow: got %+v", n)
	}
	if n := root.walk(ByTag("button", "in frame")); n == nil || n.BackendNodeID != 9 {
		t.Errorf("ByTag in frame: got %+v", n)
	}
	if n := root.walk(ByTag("button", "nowhere")); n != nil {
		t.Errorf("ByTag matched %+v", n)
	}
}

// TestUpdateDocs writes docs/<name> under the module root only when
// CDPGUARD_UPDATE_DOCS=1.
func TestUpdateDocs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"docs", "e2e"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "e2e"))
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "docs", "x.png")
	t.Setenv("CDPGUARD_UPDATE_DOCS", "")
	UpdateDocs(t, "x.png", img.Bytes())
	if _, err := os.Stat(p); err == nil {
		t.Fatal("written without CDPGUARD_UPDATE_DOCS=1")
	}
	t.Setenv("CDPGUARD_UPDATE_DOCS", "1")
	UpdateDocs(t, "x.png", img.Bytes())
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, img.Bytes()) {
		t.Fatalf("docs/x.png: %v", err)
	}
}
