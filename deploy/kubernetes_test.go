package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the decoded objects of deploy/kubernetes, one per file.
type manifests struct {
	deploy  *appsv1.Deployment
	service *corev1.Service
	pdb     *policyv1.PodDisruptionBudget
	ingress *networkingv1.Ingress
	policy  *corev1.ConfigMap // the policy file (policy_test.go)
}

// decodeStrict decodes one manifest into its typed object; unknown or
// duplicate fields are errors (a misspelt probe field would otherwise be
// dropped silently and the probe would not be what the file says).
func decodeStrict(data []byte, out any) error {
	return yaml.UnmarshalStrict(data, out)
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	var m manifests
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "\n---") {
			t.Errorf("%s: one object per file, please", f)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			m.deploy = &appsv1.Deployment{}
			obj = m.deploy
		case "v1 Service":
			m.service = &corev1.Service{}
			obj = m.service
		case "policy/v1 PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			obj = m.pdb
		case "networking.k8s.io/v1 Ingress":
			m.ingress = &networkingv1.Ingress{}
			obj = m.ingress
		case "v1 ConfigMap":
			m.policy = &corev1.ConfigMap{}
			obj = m.policy
		default:
			t.Fatalf("%s: %s %s has no check here; add one", f, head.APIVersion, head.Kind)
		}
		if err := decodeStrict(data, obj); err != nil {
			t.Fatalf("%s: strict decoding into %s: %v", f, head.Kind, err)
		}
	}
	if m.deploy == nil || m.service == nil || m.pdb == nil || m.ingress == nil || m.policy == nil {
		t.Fatalf("want a Deployment, Service, PodDisruptionBudget, Ingress and policy ConfigMap; got %+v", m)
	}
	return m
}

// TestStrictDecodingRefusesUnknownFields is the control: a misspelt field
// must fail, or the manifest checks below prove nothing.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 3\n")
	if err := decodeStrict(bad, &appsv1.Deployment{}); err == nil {
		t.Fatal("spec.replica (misspelt) was accepted")
	}
	badProbe := []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: 1, targetPot: 2}]\n")
	if err := decodeStrict(badProbe, &corev1.Service{}); err == nil {
		t.Fatal("ports[].targetPot (misspelt) was accepted")
	}
}

func containerEnv(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// TestKubernetesManifests checks the manifests against each other and
// against the flags and defaults of the cdpguard binary.
func TestKubernetesManifests(t *testing.T) {
	flags := binaryFlags(t)
	m := loadManifests(t)
	d := m.deploy

	labels := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("Deployment selector %s=%s does not match the pod template", k, v)
		}
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	env := containerEnv(c)
	names := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	checkEnv(t, "deployment.yaml", names, flags)
	for _, name := range []string{"CDPGUARD_POLICY_FILE", "SEARCH_URL", "SESSION_HEADER", "SESSION_IDLE_SECONDS", "CDPGUARD_LISTEN", "CDPGUARD_PUBLIC_HOST"} {
		if _, ok := env[name]; !ok {
			t.Errorf("deployment.yaml does not set %s", name)
		}
	}
	if strings.Contains(env["CDPGUARD_CHROME_FLAGS"], "no-sandbox") {
		t.Error("deployment.yaml turns Chromium's sandbox off")
	}

	// Ports: the listen address's port is the named container port the
	// probes, the Service and the Ingress use.
	listen := env["CDPGUARD_LISTEN"]
	if listen == "" {
		listen = flags["listen"].def
	}
	if !strings.HasPrefix(listen, "0.0.0.0:") && !strings.HasPrefix(listen, ":") {
		t.Errorf("CDPGUARD_LISTEN %q: a pod must listen on all addresses (the binary's default is %q)", listen, flags["listen"].def)
	}
	port := listenPort(t, listen)
	var portName string
	for _, p := range c.Ports {
		if p.ContainerPort > 0 && strings.TrimSpace(port) == itoa(p.ContainerPort) {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Fatalf("no containerPort %s (from CDPGUARD_LISTEN %q) in %+v", port, listen, c.Ports)
	}

	probe := func(what string, p *corev1.Probe, path string) {
		t.Helper()
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe on %s", what, path)
			return
		}
		if p.HTTPGet.Path != path {
			t.Errorf("%s path %q, want %q", what, p.HTTPGet.Path, path)
		}
		if p.HTTPGet.Port.String() != portName && p.HTTPGet.Port.String() != port {
			t.Errorf("%s port %s, want %s (%s)", what, p.HTTPGet.Port.String(), portName, port)
		}
	}
	probe("readinessProbe", c.ReadinessProbe, "/readyz")
	probe("livenessProbe", c.LivenessProbe, "/healthz")
	probe("startupProbe", c.StartupProbe, "/readyz")

	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("resource requests missing (docs/scaling.md has the measured figures)")
	}
	if lim := c.Resources.Limits.Memory(); !lim.IsZero() && lim.Cmp(*c.Resources.Requests.Memory()) < 0 {
		t.Errorf("memory limit %s below its request", lim)
	}
	sc := d.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("pod must run as a non-root user (Chromium keeps its sandbox)")
	}
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 10 {
		t.Error("terminationGracePeriodSeconds must leave cdpguard its 10 s to exit")
	}

	// Service and PDB select these pods; the Service's target is the port.
	for k, v := range m.service.Spec.Selector {
		if labels[k] != v {
			t.Errorf("Service selector %s=%s selects no cdpguard pod", k, v)
		}
	}
	var svcPort string
	for _, p := range m.service.Spec.Ports {
		if p.TargetPort.String() == portName || p.TargetPort.String() == port {
			svcPort = p.Name
		}
	}
	if svcPort == "" {
		t.Errorf("Service has no port targeting %s", portName)
	}
	if m.pdb.Spec.Selector == nil {
		t.Fatal("PodDisruptionBudget has no selector")
	}
	for k, v := range m.pdb.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("PodDisruptionBudget selector %s=%s selects no cdpguard pod", k, v)
		}
	}
	if m.pdb.Spec.MaxUnavailable == nil && m.pdb.Spec.MinAvailable == nil {
		t.Error("PodDisruptionBudget sets no bound")
	}

	// The Ingress hashes the header cdpguard keys users by.
	header := env["SESSION_HEADER"]
	if header == "" {
		header = flags["session-header"].def
	}
	if header != flags["session-header"].def {
		t.Logf("SESSION_HEADER %q differs from the binary's default %q", header, flags["session-header"].def)
	}
	ann := m.ingress.Annotations["nginx.ingress.kubernetes.io/upstream-hash-by"]
	if ann != nginxVar(header) {
		t.Errorf("upstream-hash-by %q, want %q (the session header %s)", ann, nginxVar(header), header)
	}
	public := strings.FieldsFunc(env["CDPGUARD_PUBLIC_HOST"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
	for _, r := range m.ingress.Spec.Rules {
		if r.Host != "" && !slices.Contains(public, r.Host) {
			t.Errorf("Ingress host %q is not in CDPGUARD_PUBLIC_HOST %q: cdpguard would refuse its Host header", r.Host, public)
		}
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != m.service.Name || (b.Port.Name != svcPort && itoa(b.Port.Number) != itoa(m.service.Spec.Ports[0].Port)) {
				t.Errorf("Ingress path %q does not lead to Service %s port %s: %+v", p.Path, m.service.Name, svcPort, b)
			}
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
