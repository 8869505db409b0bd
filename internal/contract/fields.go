package contract

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Failure returns the terminal failure a provider object reports
// (status.failureReason / failureMessage), if any.
func Failure(obj *unstructured.Unstructured) (reason, message string, failed bool) {
	reason, _, _ = unstructured.NestedString(obj.Object, "status", "failureReason")
	message, _, _ = unstructured.NestedString(obj.Object, "status", "failureMessage")
	if reason == "" && message == "" {
		return "", "", false
	}
	if reason == "" {
		reason = "ProviderFailure"
	}
	return reason, message, true
}

// Condition is the part of a provider's condition Millwright mirrors.
type Condition struct {
	Status, Reason, Message string
}

// ReadyCondition returns obj's Ready condition (status.conditions), if any.
func ReadyCondition(obj *unstructured.Unstructured) (Condition, bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] != "Ready" {
			continue
		}
		var out Condition
		out.Status, _ = cm["status"].(string)
		out.Reason, _ = cm["reason"].(string)
		out.Message, _ = cm["message"].(string)
		return out, true
	}
	return Condition{}, false
}

// Flag is the boolean at path in obj, false when absent.
func Flag(obj *unstructured.Unstructured, path ...string) bool {
	v, _, _ := unstructured.NestedBool(obj.Object, path...)
	return v
}

// String is the string at path in obj, "" when absent.
func String(obj *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(obj.Object, path...)
	return v
}

// InfrastructureProvisioned reports whether an InfraMachine says its
// infrastructure is provisioned: status.ready (contract v1beta1) or
// status.initialization.provisioned (its successor).
func InfrastructureProvisioned(obj *unstructured.Unstructured) bool {
	return Flag(obj, "status", "ready") || Flag(obj, "status", "initialization", "provisioned")
}

// BootstrapDataSecret returns the Secret a bootstrap config reports, once
// it says the data is ready (status.ready or
// status.initialization.dataSecretCreated).
func BootstrapDataSecret(obj *unstructured.Unstructured) (string, bool) {
	name := String(obj, "status", "dataSecretName")
	ready := Flag(obj, "status", "ready") || Flag(obj, "status", "initialization", "dataSecretCreated")
	return name, name != "" && ready
}
