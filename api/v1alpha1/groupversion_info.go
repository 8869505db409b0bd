package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&MachineClass{}, &MachineClassList{},
		&Machine{}, &MachineList{},
		&MachineSet{}, &MachineSetList{},
		&MachineDeployment{}, &MachineDeploymentList{},
		&MachineDrainRule{}, &MachineDrainRuleList{},
		&MachineHealthCheck{}, &MachineHealthCheckList{},
		&MachineDisruptionBudget{}, &MachineDisruptionBudgetList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
