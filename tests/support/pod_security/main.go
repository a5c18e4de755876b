// Command pod-security evaluates pod specs against Kubernetes' own Pod Security Standards code
// (k8s.io/pod-security-admission, the library the API server's admission plugin runs).
//
// Input on stdin: a JSON array of {"name": ..., "metadata": ObjectMeta, "spec": PodSpec}.
// Output on stdout: a JSON array of {"name": ..., "allowed": bool, "forbidden": ["reason: detail", ...]},
// each pod judged at the given level (argument 1: baseline or restricted) of the latest version.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

type pod struct {
	Name     string            `json:"name"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     corev1.PodSpec    `json:"spec"`
}

type verdict struct {
	Name      string   `json:"name"`
	Allowed   bool     `json:"allowed"`
	Forbidden []string `json:"forbidden"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pod-security baseline|restricted < pods.json")
		os.Exit(2)
	}
	level, err := api.ParseLevel(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-security: level %q: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	var pods []pod
	decoder := json.NewDecoder(os.Stdin)
	decoder.DisallowUnknownFields() // a misspelt field would otherwise be judged as absent
	if err := decoder.Decode(&pods); err != nil {
		fmt.Fprintf(os.Stderr, "pod-security: reading pods: %v\n", err)
		os.Exit(2)
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-security: %v\n", err)
		os.Exit(2)
	}
	verdicts := make([]verdict, 0, len(pods))
	for i := range pods {
		results := evaluator.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()}, &pods[i].Metadata, &pods[i].Spec)
		one := verdict{Name: pods[i].Name, Allowed: true, Forbidden: []string{}}
		for _, result := range results {
			if !result.Allowed {
				one.Allowed = false
				one.Forbidden = append(one.Forbidden, result.ForbiddenReason+": "+result.ForbiddenDetail)
			}
		}
		verdicts = append(verdicts, one)
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fmt.Fprintf(os.Stderr, "pod-security: %v\n", err)
		os.Exit(2)
	}
}
