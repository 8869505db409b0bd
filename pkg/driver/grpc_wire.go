package driver

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The kinds objects are stamped with on the wire, so a plugin written in
// another language can tell what it was handed.
var (
	machineGVK      = v1alpha1.GroupVersion.WithKind("Machine")
	machineClassGVK = v1alpha1.GroupVersion.WithKind("MachineClass")
	secretGVK       = corev1.SchemeGroupVersion.WithKind("Secret")
)

// kubeObject is a pointer to a top-level Kubernetes object type T.
type kubeObject[T any] interface {
	*T
	GetObjectKind() schema.ObjectKind
}

// encodeObject returns the Kubernetes JSON of obj, or nil for a nil obj (an
// empty bytes field means "no object"). An object without apiVersion and
// kind gets them on the wire; typed clients leave them empty.
func encodeObject[T any, P kubeObject[T]](obj P, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		// A shallow copy is enough: only its TypeMeta, a value, changes, so
		// the caller's object is never written to.
		c := *obj
		P(&c).GetObjectKind().SetGroupVersionKind(gvk)
		obj = P(&c)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, Errorf(Internal, "encoding %s: %v", gvk.Kind, err)
	}
	return b, nil
}

// decodeObject decodes Kubernetes JSON the way the API machinery does (case
// sensitive keys, integers kept as integers); empty data is a nil object.
// A bad object is the caller's fault: InvalidArgument.
func decodeObject[T any](data []byte, what string) (*T, error) {
	if len(data) == 0 {
		return nil, nil
	}
	obj := new(T)
	if err := utiljson.Unmarshal(data, obj); err != nil {
		return nil, Errorf(InvalidArgument, "decoding %s: %v", what, err)
	}
	return obj, nil
}

// objects are the Machine, MachineClass and Secret most requests carry, in
// their wire form.
type objects struct {
	machine, class, secret []byte
}

func encodeObjects(m *v1alpha1.Machine, c *v1alpha1.MachineClass, s *corev1.Secret) (o objects, err error) {
	if o.machine, err = encodeObject(m, machineGVK); err != nil {
		return o, err
	}
	if o.class, err = encodeObject(c, machineClassGVK); err != nil {
		return o, err
	}
	o.secret, err = encodeObject(s, secretGVK)
	return o, err
}

func (o objects) decode() (m *v1alpha1.Machine, c *v1alpha1.MachineClass, s *corev1.Secret, err error) {
	if m, err = decodeObject[v1alpha1.Machine](o.machine, "machine"); err != nil {
		return nil, nil, nil, err
	}
	if c, err = decodeObject[v1alpha1.MachineClass](o.class, "machineClass"); err != nil {
		return nil, nil, nil, err
	}
	if s, err = decodeObject[corev1.Secret](o.secret, "secret"); err != nil {
		return nil, nil, nil, err
	}
	return m, c, s, nil
}

func encodePVSpecs(specs []*corev1.PersistentVolumeSpec) ([][]byte, error) {
	out := make([][]byte, len(specs))
	for i, s := range specs {
		if s == nil {
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, Errorf(Internal, "encoding pvSpecs[%d]: %v", i, err)
		}
		out[i] = b
	}
	return out, nil
}

func decodePVSpecs(data [][]byte) ([]*corev1.PersistentVolumeSpec, error) {
	if data == nil {
		return nil, nil
	}
	out := make([]*corev1.PersistentVolumeSpec, len(data))
	for i, b := range data {
		s, err := decodeObject[corev1.PersistentVolumeSpec](b, fmt.Sprintf("pvSpecs[%d]", i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func addressesToWire(in []v1alpha1.MachineAddress) []*driverv1.MachineAddress {
	if in == nil {
		return nil
	}
	out := make([]*driverv1.MachineAddress, len(in))
	for i, a := range in {
		out[i] = &driverv1.MachineAddress{Type: string(a.Type), Address: a.Address}
	}
	return out
}

func addressesFromWire(in []*driverv1.MachineAddress) []v1alpha1.MachineAddress {
	if in == nil {
		return nil
	}
	out := make([]v1alpha1.MachineAddress, len(in))
	for i, a := range in {
		out[i] = v1alpha1.MachineAddress{Type: v1alpha1.MachineAddressType(a.GetType()), Address: a.GetAddress()}
	}
	return out
}

func listedToWire(in []ListedVM) []*driverv1.ListedVM {
	if in == nil {
		return nil
	}
	out := make([]*driverv1.ListedVM, len(in))
	for i, v := range in {
		out[i] = &driverv1.ListedVM{ProviderId: v.ProviderID, MachineName: v.MachineName, MachineUid: v.MachineUID}
	}
	return out
}

func listedFromWire(in []*driverv1.ListedVM) []ListedVM {
	if in == nil {
		return nil
	}
	out := make([]ListedVM, len(in))
	for i, v := range in {
		out[i] = ListedVM{ProviderID: v.GetProviderId(), MachineName: v.GetMachineName(), MachineUID: v.GetMachineUid()}
	}
	return out
}

func methodsToWire(in []Method) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, m := range in {
		out[i] = string(m)
	}
	return out
}

func methodsFromWire(in []string) []Method {
	if in == nil {
		return nil
	}
	out := make([]Method, len(in))
	for i, m := range in {
		out[i] = Method(m)
	}
	return out
}

// labelsToWire makes keys and values valid UTF-8, as protobuf strings
// must be: a driver's bad label is then refused by the manager, rather
// than failing the whole response.
func labelsToWire(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[text(k)] = text(v)
	}
	return out
}

// labelsFromWire gives nil for no labels: protobuf does not tell an empty
// map from none, and nil is what a driver that sets none returns.
func labelsFromWire(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	return in
}
