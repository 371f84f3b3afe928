// Command k8s-cel compiles and evaluates CEL expressions in the upstream Kubernetes environments: the DRA
// device selector environment (k8s.io/dynamic-resource-allocation/cel) and the apiserver base environment
// with admission-style variables. Input and output formats: tests/oracle/README.md.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	resourceapi "k8s.io/api/resource/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	sigsjson "sigs.k8s.io/json"
)

// admissionVariables are declared as dyn, in the order ValidatingAdmissionPolicy declares them.
var admissionVariables = []string{"object", "oldObject", "request", "params", "namespaceObject", "variables"}

type device struct {
	Driver                   string                                                    `json:"driver"`
	AllowMultipleAllocations *bool                                                     `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity,omitempty"`
}

type celCase struct {
	Expression string          `json:"expression"`
	Env        string          `json:"env"`
	Device     json.RawMessage `json:"device,omitempty"`
	// Variables are the admission activation (object, oldObject, request, params, namespaceObject,
	// variables); absent ones are null.
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	// EnvType is "stored" or "new" (environment.StoredExpressions / NewExpressions); the default is
	// "stored" for dra-selector (as the allocator compiles) and "new" for admission (as a new policy is checked).
	EnvType string `json:"envType,omitempty"`
	// CostLimit overrides the runtime cost limit (DRA: 1e6 per selector, admission: PerCallLimit 1e6).
	CostLimit *uint64 `json:"costLimit,omitempty"`
	// Features are Kubernetes feature gates for the DRA environment (DRAConsumableCapacity,
	// DRAListTypeAttributes) on top of the release's defaults.
	Features map[string]bool `json:"features,omitempty"`
	Repeat   int             `json:"repeat,omitempty"`
}

type celResult struct {
	Result    any     `json:"result"`
	Type      string  `json:"type,omitempty"`
	Error     *string `json:"error,omitempty"`
	Stage     string  `json:"stage,omitempty"`
	Cost      *uint64 `json:"cost,omitempty"`
	CompileNs int64   `json:"compileNs"`
	Ns        int64   `json:"ns"`
	MinNs     int64   `json:"minNs"`
	Repeat    int     `json:"repeat"`
}

type batch struct {
	Cases  []json.RawMessage `json:"cases"`
	Repeat int               `json:"repeat"`
}

func main() {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(fmt.Errorf("reading stdin: %w", err))
	}
	var b batch
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		err = json.Unmarshal(trimmed, &b.Cases)
	default:
		err = json.Unmarshal(trimmed, &b)
	}
	if err != nil {
		fail(fmt.Errorf("stdin must be a JSON list of cases or {\"cases\": [...], \"repeat\": N}: %w", err))
	}
	results := make([]celResult, 0, len(b.Cases))
	for i, raw := range b.Cases {
		res := runCase(raw, b.Repeat)
		if res.Error != nil && res.Stage == "input" {
			msg := fmt.Sprintf("cases[%d]: %s", i, *res.Error)
			res.Error = &msg
		}
		results = append(results, res)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(results); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "k8s-cel:", err)
	os.Exit(2)
}

func failure(stage string, err error) celResult {
	msg := err.Error()
	return celResult{Error: &msg, Stage: stage}
}

func runCase(raw json.RawMessage, defaultRepeat int) (res celResult) {
	// cel-go can panic on input it accepted (v0.29.2 folds a map literal with a bytes key and hashes it): report it
	// as this case's error at the stage where it happened, so one case never takes the whole batch down.
	defer func() {
		if r := recover(); r != nil {
			res = failure("program", fmt.Errorf("cel-go panicked: %v", r))
		}
	}()
	var c celCase
	strictErrs, err := sigsjson.UnmarshalStrict(raw, &c)
	if err == nil && len(strictErrs) > 0 {
		err = errors.Join(strictErrs...)
	}
	if err != nil {
		return failure("input", fmt.Errorf("invalid case: %w", err))
	}
	repeat := max(c.Repeat, defaultRepeat, 1)
	switch c.Env {
	case "dra-selector":
		return runSelector(&c, repeat)
	case "admission":
		return runAdmission(&c, repeat)
	default:
		return failure("input", fmt.Errorf("env: want \"dra-selector\" or \"admission\", got %q", c.Env))
	}
}

func envType(name string, def environment.Type) (environment.Type, error) {
	switch name {
	case "":
		return def, nil
	case "stored":
		return environment.StoredExpressions, nil
	case "new":
		return environment.NewExpressions, nil
	}
	return "", fmt.Errorf("envType: want \"stored\" or \"new\", got %q", name)
}

func runSelector(c *celCase, repeat int) celResult {
	gates := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if len(c.Features) > 0 {
		if err := gates.SetFromMap(c.Features); err != nil {
			return failure("input", fmt.Errorf("features: %w", err))
		}
	}
	et, err := envType(c.EnvType, environment.StoredExpressions)
	if err != nil {
		return failure("input", err)
	}
	var dev device
	if len(c.Device) > 0 {
		strictErrs, err := sigsjson.UnmarshalStrict(c.Device, &dev)
		if err == nil && len(strictErrs) > 0 {
			err = errors.Join(strictErrs...)
		}
		if err != nil {
			return failure("input", fmt.Errorf("device: %w", err))
		}
	}
	// Same feature wiring as the scheduler's CEL cache (dynamicresources.New).
	compiler := dracel.GetCompiler(dracel.Features{
		EnableConsumableCapacity: gates.Enabled(features.DRAConsumableCapacity),
		EnableListTypeAttributes: gates.Enabled(features.DRAListTypeAttributes),
	})
	start := time.Now()
	compiled := compiler.CompileCELExpression(c.Expression, dracel.Options{EnvType: &et, CostLimit: c.CostLimit})
	compileNs := time.Since(start).Nanoseconds()
	if compiled.Error != nil {
		res := failure("compile", compiled.Error)
		res.CompileNs = compileNs
		return res
	}
	input := dracel.Device{
		Driver:                   dev.Driver,
		AllowMultipleAllocations: dev.AllowMultipleAllocations,
		Attributes:               dev.Attributes,
		Capacity:                 dev.Capacity,
	}
	ctx := context.Background()
	var matches bool
	var details *cel.EvalDetails
	timing := newTimer()
	for i := 0; i < repeat; i++ {
		t0 := time.Now()
		matches, details, err = compiled.DeviceMatches(ctx, input)
		timing.add(time.Since(t0))
	}
	res := celResult{CompileNs: compileNs, Repeat: repeat}
	timing.fill(&res)
	if details != nil {
		res.Cost = details.ActualCost()
	}
	if err != nil {
		msg := err.Error()
		res.Error, res.Stage = &msg, "eval"
		return res
	}
	res.Result, res.Type = matches, "bool"
	return res
}

func admissionEnv(et environment.Type) (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(admissionVariables))
	for _, name := range admissionVariables {
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	envSet, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(
		environment.VersionedOptions{IntroducedVersion: environment.DefaultCompatibilityVersion(), EnvOptions: opts},
	)
	if err != nil {
		return nil, err
	}
	return envSet.Env(et)
}

func runAdmission(c *celCase, repeat int) celResult {
	if len(c.Device) > 0 {
		return failure("input", errors.New("device is only for env dra-selector"))
	}
	et, err := envType(c.EnvType, environment.NewExpressions)
	if err != nil {
		return failure("input", err)
	}
	activation := make(map[string]any, len(admissionVariables))
	for _, name := range admissionVariables {
		activation[name] = nil
	}
	for name, raw := range c.Variables {
		if _, known := activation[name]; !known {
			return failure("input", fmt.Errorf("variables: unknown name %q (want one of %s)", name, strings.Join(admissionVariables, ", ")))
		}
		value, err := decodeJSONValue(raw)
		if err != nil {
			return failure("input", fmt.Errorf("variables.%s: %w", name, err))
		}
		activation[name] = value
	}
	env, err := admissionEnv(et)
	if err != nil {
		return failure("compile", fmt.Errorf("environment: %w", err))
	}
	start := time.Now()
	ast, issues := env.Compile(c.Expression)
	var prog cel.Program
	if issues == nil || issues.Err() == nil {
		progOpts := []cel.ProgramOption{cel.InterruptCheckFrequency(celconfig.CheckFrequency)}
		if c.CostLimit != nil {
			progOpts = append(progOpts, cel.CostLimit(*c.CostLimit))
		}
		prog, err = env.Program(ast, progOpts...)
	} else {
		err = fmt.Errorf("compilation failed: %s", issues.String())
	}
	compileNs := time.Since(start).Nanoseconds()
	if err != nil {
		res := failure("compile", err)
		res.CompileNs = compileNs
		return res
	}
	ctx := context.Background()
	var val ref.Val
	var details *cel.EvalDetails
	timing := newTimer()
	for i := 0; i < repeat; i++ {
		t0 := time.Now()
		val, details, err = prog.ContextEval(ctx, activation)
		timing.add(time.Since(t0))
	}
	res := celResult{CompileNs: compileNs, Repeat: repeat}
	timing.fill(&res)
	if details != nil {
		res.Cost = details.ActualCost()
	}
	if err != nil {
		msg := err.Error()
		res.Error, res.Stage = &msg, "eval"
		return res
	}
	out, err := toJSON(val)
	if err != nil {
		msg := err.Error()
		res.Error, res.Stage = &msg, "output"
		return res
	}
	res.Result, res.Type = out, typeName(val)
	return res
}

type timer struct {
	total, min time.Duration
	n          int
}

func newTimer() *timer { return &timer{min: time.Duration(math.MaxInt64)} }

func (t *timer) add(d time.Duration) {
	t.total += d
	t.n++
	t.min = min(t.min, d)
}

func (t *timer) fill(r *celResult) {
	if t.n == 0 {
		return
	}
	r.Ns = t.total.Nanoseconds() / int64(t.n)
	r.MinNs = t.min.Nanoseconds()
}

// decodeJSONValue keeps integers as int64 and other numbers as double, like a JSON object read by the apiserver.
func decodeJSONValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return convertNumbers(v)
}

func convertNumbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(t.String(), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", t, err)
		}
		return f, nil
	case []any:
		for i := range t {
			c, err := convertNumbers(t[i])
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	case map[string]any:
		for k := range t {
			c, err := convertNumbers(t[k])
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
		return t, nil
	}
	return v, nil
}

func typeName(v ref.Val) string {
	if opt, ok := v.(*types.Optional); ok {
		if opt.HasValue() {
			return "optional(" + typeName(opt.GetValue()) + ")"
		}
		return "optional"
	}
	return v.Type().TypeName()
}

// toJSON turns a CEL value into JSON: Kubernetes types (Quantity, Semver, IP, CIDR, URL) and durations and
// timestamps as their canonical strings, bytes as base64, non-finite doubles as "NaN"/"+Inf"/"-Inf",
// an empty optional as null, a type as its name, map keys as strings.
func toJSON(v ref.Val) (any, error) {
	switch t := v.(type) {
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		f := float64(t)
		switch {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "+Inf", nil
		case math.IsInf(f, -1):
			return "-Inf", nil
		}
		return f, nil
	case types.String:
		return string(t), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString([]byte(t)), nil
	case types.Null:
		return nil, nil
	case types.Duration, types.Timestamp:
		return fmt.Sprint(v.ConvertToType(types.StringType).Value()), nil
	case apiservercel.Quantity:
		return t.Quantity.String(), nil
	case *apiservercel.Quantity:
		return t.Quantity.String(), nil
	case *apiservercel.Semver:
		return t.Version.String(), nil
	case *apiservercel.IP:
		return t.Addr.String(), nil
	case *apiservercel.CIDR:
		return t.Prefix.String(), nil
	case *apiservercel.URL:
		return t.URL.String(), nil
	case apiservercel.Semver:
		return t.Version.String(), nil
	case apiservercel.IP:
		return t.Addr.String(), nil
	case apiservercel.CIDR:
		return t.Prefix.String(), nil
	case apiservercel.URL:
		return t.URL.String(), nil
	case apiservercel.Format:
		return t.Name, nil
	case *types.Optional:
		if !t.HasValue() {
			return nil, nil
		}
		return toJSON(t.GetValue())
	case ref.Type:
		return t.TypeName(), nil
	case *types.Err:
		return nil, t
	case traits.Mapper:
		out := map[string]any{}
		it := t.Iterator()
		for it.HasNext() == types.True {
			key := it.Next()
			keyJSON, err := toJSON(key)
			if err != nil {
				return nil, err
			}
			val, err := toJSON(t.Get(key))
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(keyJSON)] = val
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		it := t.Iterator()
		for it.HasNext() == types.True {
			val, err := toJSON(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	return nil, fmt.Errorf("result of type %s cannot be written as JSON", v.Type().TypeName())
}
