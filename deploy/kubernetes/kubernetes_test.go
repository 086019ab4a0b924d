// Package kubernetes holds the tests of the Kubernetes scale-out recipe
// (scale-out.yaml, merge-job.yaml, run.sh): every manifest decodes
// strictly into the Kubernetes API types, and the properties the recipe
// depends on hold. No cluster is needed.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/runner-dev/runner/internal/execute"
)

// object is one YAML document of a manifest, decoded into the API type
// its apiVersion and kind name.
type object struct {
	file string
	obj  any // *batchv1.Job, *corev1.ConfigMap or *corev1.PersistentVolumeClaim
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifest decodes every document of a multi-document YAML file
// strictly: a field the API type does not have, or a duplicate key, is an
// error, as is a kind the recipe does not use. Documents holding only
// comments are skipped.
func decodeManifest(name string, data []byte) ([]object, error) {
	var objs []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		if onlyComments(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", name, i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		default:
			return nil, fmt.Errorf("%s: document %d: unexpected apiVersion %q kind %q", name, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %v", name, i, tm.Kind, err)
		}
		objs = append(objs, object{name, obj})
	}
	return objs, nil
}

func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// recipe is the decoded recipe: every object of every manifest.
type recipe struct {
	segments, merge *batchv1.Job
	scenario        *corev1.ConfigMap
	results         *corev1.PersistentVolumeClaim
}

func load(t *testing.T) recipe {
	t.Helper()
	var r recipe
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifest(f, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *batchv1.Job:
				switch v.Name {
				case "runner-segments":
					r.segments = v
				case "runner-merge":
					r.merge = v
				default:
					t.Errorf("%s: unexpected Job %q", f, v.Name)
				}
			case *corev1.ConfigMap:
				r.scenario = v
			case *corev1.PersistentVolumeClaim:
				r.results = v
			}
		}
	}
	if r.segments == nil || r.merge == nil || r.scenario == nil || r.results == nil {
		t.Fatalf("want Jobs runner-segments and runner-merge, a ConfigMap and a PVC; got %+v", r)
	}
	return r
}

// TestStrictDecodingCatchesUnknownFields: the decoder used here does
// refuse a field the API does not have (a misspelt completionMode), so
// that a manifest that decodes is one the API server would accept field by
// field.
func TestStrictDecodingCatchesUnknownFields(t *testing.T) {
	data, err := os.ReadFile("scale-out.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte("completionMode: Indexed"), []byte("completionsMode: Indexed"), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("scale-out.yaml has no `completionMode: Indexed` to misspell")
	}
	_, err = decodeManifest("bad.yaml", bad)
	if err == nil || !strings.Contains(err.Error(), "completionsMode") {
		t.Fatalf("a misspelt field decoded: err = %v", err)
	}
	dup := bytes.Replace(data, []byte("  backoffLimit: 0\n"), []byte("  backoffLimit: 0\n  backoffLimit: 1\n"), 1)
	if _, err := decodeManifest("dup.yaml", dup); err == nil {
		t.Fatal("a duplicate key decoded")
	}
}

// container returns the pod template's only container and its argv.
func container(t *testing.T, j *batchv1.Job) (corev1.Container, []string) {
	t.Helper()
	cs := j.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("Job %s: want one container, got %d", j.Name, len(cs))
	}
	return cs[0], append(slices.Clone(cs[0].Command), cs[0].Args...)
}

// flag returns the value after flag in argv.
func flag(t *testing.T, argv []string, name string) string {
	t.Helper()
	i := slices.Index(argv, name)
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("%q has no %s VALUE", argv, name)
	}
	return argv[i+1]
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkEnvRefs: every $(NAME) in argv is an env var of the container (else
// Kubernetes passes the text unexpanded).
func checkEnvRefs(t *testing.T, j *batchv1.Job, c corev1.Container, argv []string) {
	t.Helper()
	for _, a := range argv {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if _, ok := env(c, m[1]); !ok {
				t.Errorf("Job %s: argument %q uses $(%s), which the container's env does not define", j.Name, a, m[1])
			}
		}
	}
}

// volumeAt returns the volume mounted at the mount point that holds file
// (the longest mount path that is a parent of it) and that mount.
func volumeAt(t *testing.T, j *batchv1.Job, c corev1.Container, file string) (corev1.Volume, corev1.VolumeMount) {
	t.Helper()
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	if best.Name == "" {
		t.Fatalf("Job %s: %s is on no mounted volume (mounts %+v)", j.Name, file, c.VolumeMounts)
	}
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == best.Name {
			return v, best
		}
	}
	t.Fatalf("Job %s: mount %s names volume %q, which the pod does not have", j.Name, best.MountPath, best.Name)
	return corev1.Volume{}, best
}

func TestSegmentsJob(t *testing.T) {
	r := load(t)
	j := r.segments
	s := j.Spec
	c, argv := container(t, j)

	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v, want Indexed (pod K gets JOB_COMPLETION_INDEX=K)", s.CompletionMode)
	}
	e, ok := env(c, "RUNNER_SEGMENTS")
	if !ok {
		t.Fatal("no env RUNNER_SEGMENTS: --segment auto takes N from it on Kubernetes")
	}
	n, err := strconv.Atoi(e.Value)
	if err != nil || n < 2 {
		t.Fatalf("RUNNER_SEGMENTS = %q, want a number of segments ≥ 2", e.Value)
	}
	if s.Completions == nil || *s.Completions != int32(n) {
		t.Errorf("completions = %v, want RUNNER_SEGMENTS = %d", ptrString(s.Completions), n)
	}
	if s.Parallelism == nil || *s.Parallelism != int32(n) {
		t.Errorf("parallelism = %v, want RUNNER_SEGMENTS = %d (every segment at once)", ptrString(s.Parallelism), n)
	}

	// Fail fast: no retry, and any failed pod fails the Job.
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0", ptrString(s.BackoffLimit))
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never (podFailurePolicy requires it; a restarted segment would start late)", s.Template.Spec.RestartPolicy)
	}
	if s.PodFailurePolicy == nil || len(s.PodFailurePolicy.Rules) == 0 {
		t.Fatal("no podFailurePolicy")
	}
	failsOnExitCode := false
	for i, rule := range s.PodFailurePolicy.Rules {
		// The first matching rule decides: none may ignore or count a failure.
		if rule.Action != batchv1.PodFailurePolicyActionFailJob {
			t.Errorf("podFailurePolicy rule %d: action %q, want every rule FailJob", i, rule.Action)
		}
		oc := rule.OnExitCodes
		if oc == nil {
			continue
		}
		if oc.ContainerName != nil && *oc.ContainerName != c.Name {
			t.Errorf("podFailurePolicy rule %d names container %q; the container is %q", i, *oc.ContainerName, c.Name)
		}
		if oc.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && slices.Equal(oc.Values, []int32{0}) {
			failsOnExitCode = true
		}
	}
	if !failsOnExitCode {
		t.Error("no podFailurePolicy rule fails the Job on every exit code other than 0 (onExitCodes NotIn [0])")
	}

	// One segment per node.
	pod := s.Template
	aff := pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("no required podAntiAffinity: two segments could share a node")
	}
	perNode := false
	for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			t.Fatalf("anti-affinity selector: %v", err)
		}
		if term.TopologyKey == "kubernetes.io/hostname" && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			perNode = true
		}
	}
	if !perNode {
		t.Errorf("no anti-affinity term on kubernetes.io/hostname selects the segment pods' own labels %v", pod.Labels)
	}

	// The command.
	if len(argv) < 2 || argv[0] != "runner" || argv[1] != "run" {
		t.Fatalf("command %q, want runner run ...", argv)
	}
	if v := flag(t, argv, "--segment"); v != "auto" {
		t.Errorf("--segment %s, want auto (K from JOB_COMPLETION_INDEX, N from RUNNER_SEGMENTS)", v)
	}
	if v := flag(t, argv, "--start-at"); v != "$(START_AT)" {
		t.Errorf("--start-at %s, want $(START_AT)", v)
	}
	checkEnvRefs(t, j, c, argv)
	if e, ok := env(c, "START_AT"); !ok {
		t.Error("no env START_AT")
	} else if ref := e.ValueFrom; ref == nil || ref.ConfigMapKeyRef == nil || ref.ConfigMapKeyRef.Key != "START_AT" {
		t.Errorf("START_AT = %+v, want it from a ConfigMap made for each run (key START_AT)", e)
	}

	// The JSON goes to the shared ReadWriteMany claim, one file per segment.
	out := flag(t, argv, "--json")
	if !strings.Contains(out, "{segment}") {
		t.Errorf("--json %s: the file name has no {segment}, so the segments would overwrite each other's", out)
	}
	v, m := volumeAt(t, j, c, out)
	if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != r.results.Name {
		t.Errorf("--json %s is on volume %s, not on claim %s", out, v.Name, r.results.Name)
	}
	if m.ReadOnly {
		t.Errorf("results mount %s is read-only", m.MountPath)
	}
	if !slices.Contains(r.results.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("claim %s access modes %v: want ReadWriteMany (N pods on N nodes write it)", r.results.Name, r.results.Spec.AccessModes)
	}

	// The scenario comes from the ConfigMap.
	file := argv[len(argv)-1]
	sv, sm := volumeAt(t, j, c, file)
	if sv.ConfigMap == nil || sv.ConfigMap.Name != r.scenario.Name {
		t.Fatalf("scenario %s is on volume %s, not from ConfigMap %s", file, sv.Name, r.scenario.Name)
	}
	key := strings.TrimPrefix(file, strings.TrimSuffix(sm.MountPath, "/")+"/")
	if _, ok := r.scenario.Data[key]; !ok {
		t.Errorf("scenario %s: ConfigMap %s has no key %q (keys %v)", file, r.scenario.Name, key, mapKeys(r.scenario.Data))
	}
}

// TestScenarioConfigMap: the ConfigMap's scenario is the recipes' example
// (deploy/scenario.yaml), and compiles, with the container's TARGET_URL,
// into a plan that loads a shared target (segment mode refuses a spawned
// one).
func TestScenarioConfigMap(t *testing.T) {
	r := load(t)
	c, argv := container(t, r.segments)
	key := path.Base(argv[len(argv)-1])
	text := r.scenario.Data[key]
	example, err := os.ReadFile("../scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if text != string(example) {
		t.Errorf("ConfigMap %s key %s differs from deploy/scenario.yaml: keep the one example in both", r.scenario.Name, key)
	}
	u, ok := env(c, "TARGET_URL")
	if !ok || u.Value == "" {
		t.Fatal("the segments' container sets no TARGET_URL, which the scenario reads")
	}
	lookup := func(name string) (string, bool) {
		if e, ok := env(c, name); ok && e.ValueFrom == nil {
			return e.Value, true
		}
		return "", false
	}
	sc, _, err := execute.CompileData(key, []byte(text), lookup)
	if err != nil {
		t.Fatalf("the ConfigMap's scenario does not compile:\n%v", err)
	}
	if sc.Target.Serve != "" || sc.Target.URL != u.Value {
		t.Errorf("target serve %q url %q: want url %s (a shared target)", sc.Target.Serve, sc.Target.URL, u.Value)
	}
}

// TestMergeJob: the merge reads the directory the segments write, on the
// same claim, and writes its reports outside it (a merged JSON among the
// segments' would be read as one the next time).
func TestMergeJob(t *testing.T) {
	r := load(t)
	sc, sargv := container(t, r.segments)
	j := r.merge
	c, argv := container(t, j)
	if len(argv) < 3 || argv[0] != "runner" || argv[1] != "merge" {
		t.Fatalf("command %q, want runner merge ... DIR", argv)
	}
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0: a verdict is not retried", ptrString(j.Spec.BackoffLimit))
	}
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never: the container's exit code is the gate", j.Spec.Template.Spec.RestartPolicy)
	}
	checkEnvRefs(t, j, c, argv)

	dir := argv[len(argv)-1]
	written := path.Dir(flag(t, sargv, "--json"))
	if dir != written {
		t.Errorf("the merge reads %s; the segments write into %s", dir, written)
	}
	// The same words must mean the same values in both pods.
	for _, m := range envRef.FindAllStringSubmatch(dir, -1) {
		a, _ := env(sc, m[1])
		b, _ := env(c, m[1])
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("$(%s) is %+v in the segments and %+v in the merge", m[1], a, b)
		}
	}
	v, _ := volumeAt(t, j, c, dir+"/x.json")
	if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != r.results.Name {
		t.Errorf("the merge reads %s from volume %s, not from claim %s", dir, v.Name, r.results.Name)
	}
	// The merge also writes the outputs the scenario names, relative to
	// its working directory: on the claim, or lost with the pod.
	if wv, _ := volumeAt(t, j, c, c.WorkingDir+"/x"); wv.PersistentVolumeClaim == nil || wv.PersistentVolumeClaim.ClaimName != r.results.Name {
		t.Errorf("the merge's workingDir %q is not on claim %s", c.WorkingDir, r.results.Name)
	}
	for _, f := range []string{"--json", "--markdown", "--junit", "--html"} {
		out := flag(t, argv, f)
		if path.Dir(out) == dir {
			t.Errorf("%s %s is inside the segments' directory", f, out)
		}
		if ov, m := volumeAt(t, j, c, out); ov.PersistentVolumeClaim == nil || m.ReadOnly {
			t.Errorf("%s %s is not on the writable claim", f, out)
		}
	}
}

func ptrString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func mapKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
