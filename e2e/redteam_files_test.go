package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// rtEnforcement: the guard's own interception and the browser must stay up.
// Browser.close runs last: it closes mallory's own tabs.
func rtEnforcement(t *testing.T, e *rtEnv) {
	m, p := e.mallory, e.malPage
	t.Run("refusedOutright", func(t *testing.T) {
		for _, c := range []struct {
			session, method, rule string
			params                map[string]any
		}{
			{"", "Fetch.disable", "Fetch.*", nil},
			{"", "Fetch.enable", "Fetch.*", map[string]any{"patterns": []map[string]any{{"urlPattern": "*"}}}},
			{"", "Fetch.continueRequest", "Fetch.*", map[string]any{"requestId": "interception-job-1.0"}},
			{"", "Fetch.failRequest", "Fetch.*", map[string]any{"requestId": "interception-job-1.0", "errorReason": "Failed"}},
			{"", "Target.exposeDevToolsProtocol", "Target.exposeDevToolsProtocol", map[string]any{"targetId": e.malTarget}},
			{p, "Target.exposeDevToolsProtocol", "Target.exposeDevToolsProtocol", map[string]any{"targetId": e.malTarget}},
			{"", "Browser.crash", "Browser.crash", nil},
			{p, "Browser.crash", "Browser.crash", nil},
			{"", "Browser.crashGpuProcess", "Browser.crashGpuProcess", nil},
			{"", "Browser.executeBrowserCommand", "Browser.executeBrowserCommand", map[string]any{"commandId": "openTabSearch"}},
			{"", "Target.openDevTools", "Target.openDevTools", map[string]any{"targetId": e.malTarget}},
			{"", "Target.setRemoteLocations", "Target.setRemoteLocations", map[string]any{"locations": []map[string]any{{"host": "evil.test", "port": e.h.Forbidden.Port}}}},
			{p, "Tracing.start", "Tracing.start", nil},
			{"", "Extensions.loadUnpacked", "Extensions.*", map[string]any{"path": "/tmp"}},
			{"", "Tethering.bind", "Tethering.*", map[string]any{"port": 9333}},
			{"", "PWA.install", "PWA.*", map[string]any{"manifestId": "x"}},
			{"", "Target.createBrowserContext", "proxyServer", map[string]any{"proxyServer": "direct://"}},
			{"", "Target.createBrowserContext", "proxyBypassList", map[string]any{"proxyBypassList": "*"}},
			{"", "Browser.grantPermissions", "local-network", map[string]any{"permissions": []string{"localNetworkAccess"}}},
			{"", "Target.detachFromTarget", "not this connection's", map[string]any{"sessionId": "0123456789ABCDEF0123456789ABCDEF"}},
		} {
			_, err := m.CallWithin(c.session, c.method, c.params, 10*time.Second)
			refused(t, c.method, err, c.rule)
		}
	})
	t.Run("extraBrowserSessionNoFetch", func(t *testing.T) {
		res, err := m.CallWithin("", "Target.attachToBrowserTarget", nil, 10*time.Second)
		var at struct {
			SessionID string `json:"sessionId"`
		}
		if err != nil || json.Unmarshal(res, &at) != nil {
			t.Fatalf("attachToBrowserTarget: %v", err)
		}
		_, err = m.CallWithin(at.SessionID, "Fetch.disable", nil, 10*time.Second)
		refused(t, "Fetch.disable on a second browser session", err, "Fetch.*")
		list, _ := m.CallWithin(at.SessionID, "Target.getTargets", nil, 10*time.Second)
		e.noAlice(t, "getTargets on a second browser session", string(list))
		_, _ = m.CallWithin("", "Target.detachFromTarget", map[string]any{"sessionId": at.SessionID}, 10*time.Second)
	})
	t.Run("closeForeignTabsByID", func(t *testing.T) {
		// Any target id mallory can learn that is not hers (e.g. the
		// browser's initial tab): closing it is refused.
		list, _ := m.CallWithin(p, "Target.getTargets", nil, 10*time.Second)
		var ts struct {
			TargetInfos []struct {
				TargetID string `json:"targetId"`
				Type     string `json:"type"`
			} `json:"targetInfos"`
		}
		_ = json.Unmarshal(list, &ts)
		own, _ := m.CallWithin("", "Target.getTargets", nil, 10*time.Second)
		for _, ti := range ts.TargetInfos {
			if ti.Type != "page" || strings.Contains(string(own), ti.TargetID) {
				continue
			}
			_, err := m.CallWithin("", "Target.closeTarget", map[string]any{"targetId": ti.TargetID}, 10*time.Second)
			refused(t, "Target.closeTarget of a foreign tab", err, "not in this user's browser context")
		}
		e.aliceIntact(t)
	})
	t.Run("browserCloseLeavesOthers", func(t *testing.T) {
		res, err := m.CallWithin("", "Browser.close", nil, 10*time.Second)
		if err != nil || string(res) != "{}" {
			t.Errorf("Browser.close: %s %v, want {}", res, err)
		}
		e.aliceIntact(t)
		if _, err := m.CallWithin("", "Target.getTargets", nil, 10*time.Second); err != nil {
			t.Errorf("mallory's connection after Browser.close: %v", err)
		}
	})
}

// rtFiles: local files must stay out of reach.
func rtFiles(t *testing.T, e *rtEnv) {
	m, p := e.mallory, e.malPage
	t.Run("loadNetworkResource", func(t *testing.T) {
		for _, u := range []string{"file:///etc/passwd", " file:///etc/passwd", e.evil("lnr")} {
			_, err := m.CallWithin(p, "Network.loadNetworkResource", map[string]any{"frameId": e.malTarget, "url": u, "options": map[string]any{"disableCache": true, "includeCredentials": false}}, 10*time.Second)
			refused(t, "Network.loadNetworkResource "+u, err, "Network.loadNetworkResource")
		}
		e.noLeak(t)
	})
	t.Run("fileInputAndDrop", func(t *testing.T) {
		res, err := m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `document.body.appendChild(Object.assign(document.createElement("input"), {type: "file", id: "rtfile"}))`}, 10*time.Second)
		var obj struct {
			Result struct {
				ObjectID string `json:"objectId"`
			} `json:"result"`
		}
		if err != nil || json.Unmarshal(res, &obj) != nil {
			t.Fatalf("file input: %v", err)
		}
		for _, f := range []string{"/etc/passwd", "/proc/self/environ", "../../../../etc/passwd"} {
			_, err = m.CallWithin(p, "DOM.setFileInputFiles", map[string]any{"files": []string{f}, "objectId": obj.Result.ObjectID}, 10*time.Second)
			refused(t, "DOM.setFileInputFiles "+f, err, "DOM.setFileInputFiles")
		}
		_, err = m.CallWithin(p, "Input.dispatchDragEvent", map[string]any{"type": "drop", "x": 5, "y": 5, "data": map[string]any{"items": []any{}, "files": []string{"/etc/passwd"}, "dragOperationsMask": 1}}, 10*time.Second)
		refused(t, "Input.dispatchDragEvent with a file", err, "Input.dispatchDragEvent")
		got, _ := m.Eval(p, `String(document.getElementById("rtfile").files.length)`)
		if got != `"0"` {
			t.Errorf("file input has %s files", got)
		}
	})
	t.Run("downloads", func(t *testing.T) {
		dir := t.TempDir()
		for _, c := range []struct {
			session, method string
		}{{"", "Browser.setDownloadBehavior"}, {p, "Page.setDownloadBehavior"}, {p, "Browser.setDownloadBehavior"}} {
			if _, err := m.CallWithin(c.session, c.method, map[string]any{"behavior": "allow", "downloadPath": dir}, 10*time.Second); err != nil {
				t.Logf("%s: %v", c.method, err)
			}
		}
		_, _ = m.Eval(p, `(()=>{const a=document.createElement("a");a.href="data:text/plain,rt-download";a.download="rt.txt";document.body.appendChild(a);a.click();return 1})()`)
		time.Sleep(time.Second)
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("LEAK: a download landed in the agent's downloadPath: %v", ents)
		}
	})
	t.Run("ioAndSnapshots", func(t *testing.T) {
		for _, h := range []string{"1", "0", "-1", "blob:" + e.h.Allowed.Origin() + "/x", "/etc/passwd"} {
			res, err := m.CallWithin("", "IO.read", map[string]any{"handle": h}, 10*time.Second)
			failed(t, "IO.read "+h, err)
			if strings.Contains(string(res), "root:") {
				t.Errorf("LEAK: IO.read %s: %.200s", h, res)
			}
		}
		res, err := m.CallWithin(p, "Page.captureSnapshot", nil, 10*time.Second)
		t.Logf("Page.captureSnapshot: %v (%d bytes)", err, len(res))
		e.noAlice(t, "Page.captureSnapshot", string(res))
		res, _ = m.CallWithin(p, "Page.getFrameTree", nil, 10*time.Second)
		e.noAlice(t, "Page.getFrameTree", string(res))
	})
}
