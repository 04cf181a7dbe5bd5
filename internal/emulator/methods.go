package emulator

import (
	"reflect"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// otherPermissions are the permissions of the methods whose permission is
// not compute.<collection>.<verb> by the usual verbs (see permissionOf): the
// organization operations' and the mounted APIs' (addMethods).
var otherPermissions = map[string]permission{
	"globalOrganizationOperations.get":    {"compute.globalOrganizationOperations.get", false},
	"globalOrganizationOperations.list":   {"compute.globalOrganizationOperations.list", false},
	"globalOrganizationOperations.delete": {"compute.globalOrganizationOperations.delete", true},
}

// otherResponseTypes are the response types of the methods that
// responseType does not tell from their verb, for fields=.
var otherResponseTypes = map[string]reflect.Type{
	"globalOrganizationOperations.get":  reflect.TypeOf(compute.Operation{}),
	"globalOrganizationOperations.list": reflect.TypeOf(compute.OperationList{}),
}

// addMethods adds a mounted API's permissions and response types to
// otherPermissions and otherResponseTypes.
func addMethods(perms map[string]core.Permission, types map[string]reflect.Type) {
	for name, p := range perms {
		otherPermissions[name] = permission{name: p.Name, write: p.Write}
	}
	for name, t := range types {
		otherResponseTypes[name] = t
	}
}
