package files

import (
	"fmt"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// CheckUpload enforces the upload directory on a command with a files
// param (DOM.setFileInputFiles): every path must resolve inside the upload
// directory, and the resolved paths are what Chrome gets, so a link swapped
// in after the check is not followed.
func (f *Dirs) CheckUpload(cmd relay.Command) relay.Verdict {
	in := map[string]jsonv2.Value{}
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	resolved, v := f.resolve(cmd.Method, in)
	if resolved == nil {
		return v
	}
	in["files"] = resolved
	return marshalParams(cmd.Method, in)
}

// CheckDrop is CheckUpload for a command whose data param holds the files
// (Input.dispatchDragEvent).
func (f *Dirs) CheckDrop(cmd relay.Command) relay.Verdict {
	in := map[string]jsonv2.Value{}
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	raw, ok := in["data"]
	if !ok {
		return relay.Verdict{}
	}
	var data map[string]jsonv2.Value
	if err := jsonv2.Unmarshal(raw, &data); err != nil {
		return refusal(cmd.Method, "unreadable data: "+err.Error())
	}
	resolved, v := f.resolve(cmd.Method, data)
	if resolved == nil {
		return v
	}
	data["files"] = resolved
	var err error
	if in["data"], err = jsonv2.Marshal(data); err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return marshalParams(cmd.Method, in)
}

// resolve checks holder's files and returns them resolved; nil with the
// verdict to answer when there is nothing to rewrite (no files: the zero
// verdict) or a path is refused.
func (f *Dirs) resolve(method string, holder map[string]jsonv2.Value) (jsonv2.Value, relay.Verdict) {
	raw, ok := holder["files"]
	if !ok {
		return nil, relay.Verdict{}
	}
	var files []string
	if err := jsonv2.Unmarshal(raw, &files); err != nil {
		return nil, refusal(method, "files is not a list of paths")
	}
	if len(files) == 0 {
		return nil, relay.Verdict{}
	}
	resolved := make([]string, len(files))
	for i, p := range files {
		r, err := firewall.ResolveInside(f.cfg.UploadDir, p)
		if err != nil {
			if f.cfg.UploadDir == "" {
				return nil, refusal(method, fmt.Sprintf("%q: uploads are disabled (no --upload-dir)", p))
			}
			f.d.Log.Debug("upload path refused", "method", method, "path", p, "err", err)
			return nil, refusal(method, uploadRefusal(i))
		}
		resolved[i] = r
	}
	b, err := jsonv2.Marshal(resolved)
	if err != nil {
		return nil, refusal(method, err.Error())
	}
	return b, relay.Verdict{}
}

func marshalParams(method string, in map[string]jsonv2.Value) relay.Verdict {
	params, err := jsonv2.Marshal(in)
	if err != nil {
		return refusal(method, err.Error())
	}
	return relay.Verdict{Params: params}
}

// uploadRefusal is the one answer to every path that is not a file inside
// the upload directory, whether it is missing, outside, through a link or
// with "..": an error that differed (the resolver's "lstat ...: no such
// file" for a missing path, "outside" for an existing one) told an agent
// which files exist on the guard's host. It names the entry by index, not
// by path, so the answers for two paths are the same text; the log has the
// cause.
func uploadRefusal(i int) string {
	return fmt.Sprintf("files[%d] is not a file inside the upload directory (missing, outside it, or a link out of it); only files inside the upload directory may be uploaded", i)
}
