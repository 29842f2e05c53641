package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/payrecon/payrecon/httpapi"
)

// The deployment examples in deploy/ name flags, environment variables,
// ports and paths: each must be one the binary accepts, on the listener it
// is meant for. (The Grafana dashboard's metrics are checked against a
// running service's /metrics by TestRunInProcess.)

// parseArgs parses args with env as the environment, exactly as the
// binary does, without running the command, and returns the selected
// command's flags' environment variables.
func parseArgs(t *testing.T, args []string, env map[string]string) (map[string]bool, error) {
	t.Helper()
	c := &cli{}
	getenv := func(k string) string { return env[k] }
	parser, err := kong.New(c, kong.Name("payrecon"), kong.Exit(func(int) {}), kong.Writers(io.Discard, io.Discard),
		kong.Resolvers(envResolver{getenv}), flagVars)
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		return nil, err
	}
	envs := map[string]bool{}
	for _, f := range kctx.Flags() {
		for _, e := range f.Envs {
			envs[e] = true
		}
	}
	return envs, nil
}

// checkEnv fails for each variable of env the command does not read.
func checkEnv(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	known, err := parseArgs(t, args, env)
	if err != nil {
		t.Errorf("%s: payrecon %s does not accept its flags and environment: %v", where, strings.Join(args, " "), err)
		return
	}
	for name := range env {
		if !known[name] {
			t.Errorf("%s: payrecon %s reads no variable %s", where, strings.Join(args, " "), name)
		}
	}
}

// served reports whether the public (admin false) or admin listener
// answers path with anything but 404.
func served(path string, admin bool) bool {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	deps := httpapi.Deps{Ready: ok, Metrics: ok}
	h := httpapi.NewServer(deps)
	if admin {
		h = httpapi.NewAdminServer(deps)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code != http.StatusNotFound
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	dir := "../../deploy/kubernetes"
	docs := map[string]map[string]any{} // kind → document
	kust := readYAML(t, filepath.Join(dir, "kustomization.yaml"))[0]
	for _, r := range list(kust["resources"]) {
		for _, d := range readYAML(t, filepath.Join(dir, r.(string))) {
			docs[str(d["kind"])] = d
		}
	}
	for _, kind := range []string{"Secret", "Deployment", "Service", "PodDisruptionBudget", "Job"} {
		if docs[kind] == nil {
			t.Fatalf("no %s in the kustomization's resources", kind)
		}
	}
	secretKeys := map[string]string{}
	for k, v := range dict(docs["Secret"]["stringData"]) {
		secretKeys[k] = str(v)
	}
	secretName := str(dict(docs["Secret"]["metadata"])["name"])

	dep := docs["Deployment"]
	spec := dict(dep["spec"])
	if r := str(spec["replicas"]); r != "2" {
		t.Errorf("the Deployment runs %s replicas, want 2", r)
	}
	labels := dict(dict(dict(spec["template"])["metadata"])["labels"])
	pod := dict(dict(spec["template"])["spec"])
	c := dict(list(pod["containers"])[0])
	args := strs(c["args"])
	env := map[string]string{}
	for _, ef := range list(c["envFrom"]) {
		if name := str(dict(dict(ef)["secretRef"])["name"]); name != secretName {
			t.Errorf("envFrom names Secret %q, the manifests define %q", name, secretName)
		}
		for k, v := range secretKeys {
			env[k] = v
		}
	}
	for _, e := range list(c["env"]) {
		env[str(dict(e)["name"])] = str(dict(e)["value"])
	}
	checkEnv(t, "deployment.yaml", args, env)
	if args[0] != "run" {
		t.Errorf("the Deployment runs payrecon %v, want run", args)
	}
	if env["PAYRECON_CONSOLE_PASSWORD"] == "" {
		t.Error("the admin listener leaves loopback without a console password: run would exit 2")
	}
	if env["PAYRECON_REPAIR_MODE"] != "review" {
		t.Errorf("the Deployment starts in repair mode %q, want review (a first day)", env["PAYRECON_REPAIR_MODE"])
	}
	ports := map[string]int{}
	for _, p := range list(c["ports"]) {
		n, _ := strconv.Atoi(str(dict(p)["containerPort"]))
		ports[str(dict(p)["name"])] = n
	}
	httpPort, adminPort := portOf(t, env["PAYRECON_HTTP_ADDR"]), portOf(t, env["PAYRECON_ADMIN_ADDR"])
	if ports["http"] != httpPort || ports["admin"] != adminPort || len(ports) != 2 {
		t.Errorf("container ports %v; the listeners are on %d (public) and %d (admin)", ports, httpPort, adminPort)
	}
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		get := dict(dict(c[probe])["httpGet"])
		path, port := str(get["path"]), str(get["port"])
		if path != want || !served(path, ports[port] == adminPort) || ports[port] == 0 {
			t.Errorf("%s: %s on port %q; want %s, served on a container port", probe, path, port, want)
		}
	}
	ann := dict(dict(dict(spec["template"])["metadata"])["annotations"])
	if p, _ := strconv.Atoi(str(ann["prometheus.io/port"])); p != adminPort || !served(str(ann["prometheus.io/path"]), true) {
		t.Errorf("Prometheus scrapes port %v path %v; /metrics is on the admin port %d", ann["prometheus.io/port"], ann["prometheus.io/path"], adminPort)
	}
	res := dict(c["resources"])
	if dict(res["requests"])["memory"] == nil || dict(res["limits"])["memory"] == nil {
		t.Error("the container has no memory request and limit")
	}
	sc := dict(c["securityContext"])
	if str(sc["readOnlyRootFilesystem"]) != "true" || str(sc["allowPrivilegeEscalation"]) != "false" || str(dict(pod["securityContext"])["runAsNonRoot"]) != "true" {
		t.Errorf("the container is not hardened: %v, pod %v", sc, pod["securityContext"])
	}
	if uid := str(dict(pod["securityContext"])["runAsUser"]); uid != strconv.Itoa(imageUID) {
		t.Errorf("the pod runs as %s; the image's user is %d", uid, imageUID)
	}

	svc := dict(docs["Service"]["spec"])
	for _, p := range list(svc["ports"]) {
		target := str(dict(p)["targetPort"])
		n, err := strconv.Atoi(target)
		if err != nil {
			n = ports[target]
		}
		if n != httpPort {
			t.Errorf("the Service exposes port %s (%d): only the public listener %d may be", target, n, httpPort)
		}
	}
	if !mapsEqual(dict(svc["selector"]), labels) {
		t.Errorf("the Service selects %v, the pods carry %v", svc["selector"], labels)
	}
	pdb := dict(docs["PodDisruptionBudget"]["spec"])
	if str(pdb["minAvailable"]) != "1" || !mapsEqual(dict(dict(pdb["selector"])["matchLabels"]), labels) {
		t.Errorf("the PodDisruptionBudget: %v", pdb)
	}

	job := dict(dict(dict(docs["Job"]["spec"])["template"])["spec"])
	jc := dict(list(job["containers"])[0])
	jenv := map[string]string{}
	for _, e := range list(jc["env"]) {
		ref := dict(dict(dict(e)["valueFrom"])["secretKeyRef"])
		v := str(dict(e)["value"])
		if len(ref) > 0 {
			if str(ref["name"]) != secretName || secretKeys[str(ref["key"])] == "" {
				t.Errorf("the Job reads %v, which the Secret does not hold", ref)
			}
			v = secretKeys[str(ref["key"])]
		}
		jenv[str(dict(e)["name"])] = v
	}
	if jargs := strs(jc["args"]); !slices.Equal(jargs, []string{"migrate"}) {
		t.Errorf("the Job runs payrecon %v, want migrate", jargs)
	} else {
		checkEnv(t, "migrate-job.yaml", jargs, jenv)
	}
	if str(job["restartPolicy"]) != "Never" {
		t.Errorf("the migrate Job's restartPolicy is %v", job["restartPolicy"])
	}
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	unit := "../../deploy/systemd/payrecon.service"
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	var exec []string
	set := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		set[k] = v
		switch k {
		case "Environment":
			name, val, _ := strings.Cut(v, "=")
			env[name] = strings.ReplaceAll(val, "%d", t.TempDir())
		case "EnvironmentFile":
			for name, val := range readEnvFile(t, filepath.Join("../../deploy/systemd", filepath.Base(v))) {
				env[name] = val
			}
		case "ExecStart":
			exec = strings.Fields(v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(exec) < 2 || filepath.Base(exec[0]) != "payrecon" || exec[1] != "run" {
		t.Fatalf("ExecStart runs %v, want payrecon run", exec)
	}
	checkEnv(t, "payrecon.service", exec[1:], env)
	for _, k := range []string{"DynamicUser", "NoNewPrivileges", "ProtectSystem", "PrivateTmp", "CapabilityBoundingSet", "SystemCallFilter", "RestartPreventExitStatus"} {
		if _, ok := set[k]; !ok {
			t.Errorf("the unit does not set %s", k)
		}
	}
	if env["PAYRECON_CONSOLE_PASSWORD_FILE"] == "" || set["LoadCredential"] == "" {
		t.Error("the console password does not come from a credential")
	}
	// systemd's own checks, where systemd is installed: the unit parses,
	// and its exposure stays low.
	analyze, err := exec_lookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit's syntax is not checked by systemd")
		return
	}
	b, _ := os.ReadFile(unit)
	copyPath := filepath.Join(t.TempDir(), "payrecon.service")
	bin, _ := exec_lookPath("true")
	if err := os.WriteFile(copyPath, []byte(strings.Replace(string(b), "ExecStart="+exec[0], "ExecStart="+bin, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := execCommand(analyze, "verify", copyPath); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := execCommand(analyze, "security", "--offline=yes", copyPath)
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindStringSubmatch(out)
	switch {
	case err != nil && m == nil:
		t.Logf("systemd-analyze security --offline is not supported here: %v", err)
	case m == nil:
		t.Errorf("systemd-analyze security said:\n%s", out)
	default:
		if level, _ := strconv.ParseFloat(m[1], 64); level > 2 {
			t.Errorf("the unit's exposure level is %s, want at most 2 (systemd-analyze security)", m[1])
		}
	}
}

func exec_lookPath(name string) (string, error) { return exec.LookPath(name) }

func execCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// readEnvFile reads KEY=VALUE lines, skipping comments.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not KEY=VALUE: %q", path, line)
		}
		out[k] = v
	}
	return out
}

func TestGrafanaDashboardIsValid(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../deploy/grafana/payrecon.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "payrecon_") {
				t.Errorf("panel %q queries no payrecon metric: %q", p.Title, tg.Expr)
			}
		}
	}
}

// A subset of YAML, enough for the manifests: block maps and lists,
// scalars (plain or double-quoted), comments, documents separated by ---.

type yamlLine struct {
	indent int
	text   string
}

func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, doc := range strings.Split("\n"+string(b), "\n---") {
		var lines []yamlLine
		for _, raw := range strings.Split(doc, "\n") {
			text := strings.TrimRight(raw, " \t")
			trimmed := strings.TrimLeft(text, " ")
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			lines = append(lines, yamlLine{indent: len(text) - len(trimmed), text: trimmed})
		}
		if len(lines) == 0 {
			continue
		}
		v, next := yamlNode(t, lines, 0, lines[0].indent)
		if next != len(lines) {
			t.Fatalf("%s: cannot parse from %q", path, lines[next].text)
		}
		docs = append(docs, dict(v))
	}
	return docs
}

func yamlNode(t *testing.T, lines []yamlLine, i, indent int) (any, int) {
	if strings.HasPrefix(lines[i].text, "- ") || lines[i].text == "-" {
		var out []any
		for i < len(lines) && lines[i].indent == indent && strings.HasPrefix(lines[i].text, "-") {
			rest := strings.TrimSpace(strings.TrimPrefix(lines[i].text, "-"))
			switch {
			case rest == "":
				var v any
				v, i = yamlNode(t, lines, i+1, lines[i+1].indent)
				out = append(out, v)
			case yamlKey(rest) != "":
				// "- key: value": a map whose first line is rest, at the
				// item's indentation plus two.
				sub := append([]yamlLine{{indent: indent + 2, text: rest}}, lines[i+1:]...)
				v, n := yamlNode(t, sub, 0, indent+2)
				out = append(out, v)
				i += n
			default:
				out = append(out, yamlScalar(rest))
				i++
			}
		}
		return out, i
	}
	out := map[string]any{}
	for i < len(lines) && lines[i].indent == indent && !strings.HasPrefix(lines[i].text, "-") {
		k := yamlKey(lines[i].text)
		if k == "" {
			t.Fatalf("not a key: %q", lines[i].text)
		}
		rest := strings.TrimSpace(strings.TrimPrefix(lines[i].text, k+":"))
		i++
		switch {
		case rest != "":
			out[yamlScalar(k).(string)] = yamlScalar(rest)
		case i < len(lines) && (lines[i].indent > indent || (lines[i].indent == indent && strings.HasPrefix(lines[i].text, "-"))):
			out[yamlScalar(k).(string)], i = yamlNode(t, lines, i, lines[i].indent)
		default:
			out[yamlScalar(k).(string)] = ""
		}
	}
	return out, i
}

// yamlKey is the key of a "key: value" or "key:" line, or "".
var yamlKeyRE = regexp.MustCompile(`^("[^"]*"|[A-Za-z0-9_./-]+):( |$)`)

func yamlKey(s string) string {
	m := yamlKeyRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

func yamlScalar(s string) any {
	if strings.HasPrefix(s, `"`) {
		var v string
		if err := json.Unmarshal([]byte(s), &v); err == nil {
			return v
		}
	}
	return s
}

func dict(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func strs(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if str(b[k]) != str(v) {
			return false
		}
	}
	return true
}
