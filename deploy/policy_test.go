package deploy

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// checkPolicyFile runs the binary's own parser on a policy file
// (`cdpguard check --policy-file`), so a deployment's file is valid for
// the cdpguard it ships with.
func checkPolicyFile(t *testing.T, where, file string) {
	t.Helper()
	bin, err := cdpguardBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "--policy-file", file, "https://example.com/")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: the policy file does not load: %v\n%s", where, err, out)
	}
}

// TestKubernetesPolicyFile: the policy comes from the ConfigMap, mounted
// as a directory (a subPath mount is never updated, so a change would not
// reach the pod), at the path CDPGUARD_POLICY_FILE names, and the old
// policy variables are gone (cdpguard refuses them beside a file).
func TestKubernetesPolicyFile(t *testing.T) {
	m := loadManifests(t)
	c := m.deploy.Spec.Template.Spec.Containers[0]
	env := containerEnv(c)
	file := env["CDPGUARD_POLICY_FILE"]
	if file == "" || !path.IsAbs(file) {
		t.Fatalf("CDPGUARD_POLICY_FILE %q: want an absolute path", file)
	}
	for _, old := range []string{"ALLOWED_ORIGINS", "BLOCKED_ORIGINS", "EXTRA_INSTRUCTIONS"} {
		if v, ok := env[old]; ok && strings.TrimSpace(v) != "" {
			t.Errorf("deployment.yaml sets %s=%q beside CDPGUARD_POLICY_FILE: cdpguard refuses to start", old, v)
		}
	}
	var volume string
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == path.Dir(file) {
			if vm.SubPath != "" || vm.SubPathExpr != "" {
				t.Errorf("volume %s is mounted with subPath: the kubelet never updates it", vm.Name)
			}
			if !vm.ReadOnly {
				t.Errorf("volume %s: mount it read-only", vm.Name)
			}
			volume = vm.Name
		}
	}
	if volume == "" {
		t.Fatalf("no volume mounted at %s (the directory of CDPGUARD_POLICY_FILE)", path.Dir(file))
	}
	var cm string
	for _, v := range m.deploy.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.ConfigMap != nil {
			cm = v.ConfigMap.Name
		}
	}
	if cm != m.policy.Name {
		t.Fatalf("volume %s is ConfigMap %q, want %q (configmap.yaml)", volume, cm, m.policy.Name)
	}
	data, ok := m.policy.Data[path.Base(file)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm, path.Base(file))
	}
	tmp := filepath.Join(t.TempDir(), path.Base(file))
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	checkPolicyFile(t, "configmap.yaml", tmp)
}

// TestComposePolicyFile: compose bind-mounts a directory holding the
// policy file at the directory CDPGUARD_POLICY_FILE names (a file mount
// would keep the old file when an editor renames a new one over it).
func TestComposePolicyFile(t *testing.T) {
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	g := f.Services["cdpguard"]
	file := g.Environment["CDPGUARD_POLICY_FILE"]
	if file == "" {
		t.Fatal("compose.yaml: cdpguard has no CDPGUARD_POLICY_FILE")
	}
	for _, old := range []string{"ALLOWED_ORIGINS", "BLOCKED_ORIGINS", "EXTRA_INSTRUCTIONS"} {
		if v := g.Environment[old]; strings.TrimSpace(v) != "" {
			t.Errorf("compose.yaml sets %s=%q beside CDPGUARD_POLICY_FILE: cdpguard refuses to start", old, v)
		}
	}
	var host string
	for _, v := range g.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == path.Dir(file) {
			host = parts[0]
			if len(parts) < 3 || !strings.Contains(parts[2], "ro") {
				t.Errorf("volume %q: mount the policy read-only", v)
			}
		}
	}
	if host == "" {
		t.Fatalf("compose.yaml mounts nothing at %s (the directory of CDPGUARD_POLICY_FILE)", path.Dir(file))
	}
	if st, err := os.Stat(host); err != nil || !st.IsDir() {
		t.Fatalf("%s: want a directory beside compose.yaml: %v", host, err)
	}
	checkPolicyFile(t, "compose.yaml", filepath.Join(host, path.Base(file)))
}
