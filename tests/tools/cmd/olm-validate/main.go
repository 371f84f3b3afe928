// Command olm-validate runs the operator-framework's own validators on a registry+v1 bundle directory:
//
//	olm-validate [-k8s-version 1.35] bundle/
//
// It loads the bundle as OLM does (github.com/operator-framework/api/pkg/manifests), runs the default bundle
// validators (CSV, CRD, bundle) plus the OperatorHub, good-practice, deprecated-API and object validators, and
// prints one JSON line per finding: {"level": "error"|"warning", "validator": ..., "type": ..., "field": ..., "detail": ...}.
// Exit status: 0 clean, 1 at least one error (warnings alone pass), 2 the bundle could not be loaded.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
)

type finding struct {
	Level     string `json:"level"`
	Validator string `json:"validator"`
	Type      string `json:"type"`
	Field     string `json:"field,omitempty"`
	Detail    string `json:"detail"`
}

func main() {
	k8sVersion := flag.String("k8s-version", "1.35", "the Kubernetes minor the deprecated-API validator checks against")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: olm-validate [-k8s-version 1.35] BUNDLE_DIR")
		os.Exit(2)
	}
	bundle, err := manifests.GetBundleFromDir(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "olm-validate: %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	options := map[string]string{"k8s-version": *k8sVersion}
	objects := append(bundle.ObjectsToValidate(), bundle, options)
	named := []struct {
		name string
		v    validator.Validator
	}{
		{"csv", validation.ClusterServiceVersionValidator},
		{"crd", validation.CustomResourceDefinitionValidator},
		{"bundle", validation.BundleValidator},
		{"operatorhub-v2", validation.OperatorHubV2Validator},
		{"standard-capabilities", validation.StandardCapabilitiesValidator},
		{"standard-categories", validation.StandardCategoriesValidator},
		{"good-practices", validation.GoodPracticesValidator},
		{"deprecated-apis", validation.AlphaDeprecatedAPIsValidator},
		{"objects", validation.ObjectValidator},
	}
	out := json.NewEncoder(os.Stdout)
	failed := false
	for _, n := range named {
		for _, result := range n.v.Validate(objects...) {
			for _, e := range result.Errors {
				failed = true
				emit(out, "error", n.name, e)
			}
			for _, w := range result.Warnings {
				emit(out, "warning", n.name, w)
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

func emit(out *json.Encoder, level, validator string, e errors.Error) {
	f := finding{Level: level, Validator: validator, Type: string(e.Type), Field: e.Field, Detail: e.Error()}
	if err := out.Encode(f); err != nil {
		fmt.Fprintf(os.Stderr, "olm-validate: %v\n", err)
		os.Exit(2)
	}
}
