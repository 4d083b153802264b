// Command bundle-validate checks an OLM registry+v1 bundle directory the way `operator-sdk bundle validate DIR
// --select-optional suite=operatorframework` does, with the same validation library operator-sdk v1.42 uses
// (github.com/operator-framework/api): the bundle format (manifests/, metadata/annotations.yaml and its required
// annotations), the default validators (bundle, CSV, CRDs) and the operatorframework suite (operatorhub/v2,
// standard capabilities and categories, deprecated APIs, good practices). operator-sdk itself is not served by the
// Go module proxy this project builds from; see e2e/bundle-validate/README.md.
//
// Usage: bundle-validate DIR. Prints one line per finding ("ERROR ..." or "WARNING ..."); exit 0 without errors,
// 1 with errors, 2 when DIR cannot be read as a bundle.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
	"sigs.k8s.io/yaml"
)

// The annotations every registry+v1 bundle's metadata/annotations.yaml carries.
var requiredAnnotations = []string{
	"operators.operatorframework.io.bundle.mediatype.v1",
	"operators.operatorframework.io.bundle.manifests.v1",
	"operators.operatorframework.io.bundle.metadata.v1",
	"operators.operatorframework.io.bundle.package.v1",
	"operators.operatorframework.io.bundle.channels.v1",
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bundle-validate DIR")
		os.Exit(2)
	}
	findings, err := validate(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bundle-validate: %v\n", err)
		os.Exit(2)
	}
	errorCount := 0
	for _, finding := range findings {
		fmt.Println(finding)
		if strings.HasPrefix(finding, "ERROR") {
			errorCount++
		}
	}
	fmt.Printf("%d error(s), %d warning(s) in %s\n", errorCount, len(findings)-errorCount, os.Args[1])
	if errorCount > 0 {
		os.Exit(1)
	}
}

// validate returns the findings for the bundle in dir, format problems first.
func validate(dir string) ([]string, error) {
	findings, err := formatFindings(dir)
	if err != nil {
		return nil, err
	}
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not a loadable bundle: %w", dir, err)
	}
	objects := bundle.ObjectsToValidate()
	results := validation.DefaultBundleValidators.Validate(objects...)
	// The operatorframework suite. (Validators.WithValidators prepends, so the list is spelled out.)
	suite := validator.Validators{
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	}
	results = append(results, suite.Validate(objects...)...)
	var content []string
	for _, result := range results {
		for _, problem := range append(append([]errors.Error{}, result.Errors...), result.Warnings...) {
			level := "WARNING"
			if problem.Level == errors.LevelError {
				level = "ERROR"
			}
			content = append(content, fmt.Sprintf("%s %s: %s", level, result.Name, problem.Error()))
		}
	}
	sort.Strings(content)
	return append(findings, dedupe(content)...), nil
}

// formatFindings checks the directory layout and metadata/annotations.yaml.
func formatFindings(dir string) ([]string, error) {
	var findings []string
	for _, sub := range []string{"manifests", "metadata"} {
		if info, err := os.Stat(filepath.Join(dir, sub)); err != nil || !info.IsDir() {
			findings = append(findings, fmt.Sprintf("ERROR format: %s/ is missing", sub))
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return append(findings, "ERROR format: metadata/annotations.yaml cannot be read"), nil
	}
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(text, &file); err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	for _, key := range requiredAnnotations {
		if strings.TrimSpace(file.Annotations[key]) == "" {
			findings = append(findings, fmt.Sprintf("ERROR format: annotation %s is missing or empty", key))
		}
	}
	expected := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
	}
	for key, value := range expected {
		if got, ok := file.Annotations[key]; ok && got != value {
			findings = append(findings, fmt.Sprintf("ERROR format: annotation %s is %q, expected %q", key, got, value))
		}
	}
	if channel, ok := file.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]; ok {
		channels := strings.Split(file.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",")
		found := false
		for _, candidate := range channels {
			found = found || strings.TrimSpace(candidate) == channel
		}
		if !found {
			findings = append(findings, fmt.Sprintf("ERROR format: default channel %q is not among the channels", channel))
		}
	}
	sort.Strings(findings)
	return findings, nil
}

func dedupe(sorted []string) []string {
	var out []string
	for index, line := range sorted {
		if index == 0 || line != sorted[index-1] {
			out = append(out, line)
		}
	}
	return out
}
