package pages

import "testing"

func TestCheckOwnerTiesDoctorNamesToPackages(t *testing.T) {
	names := []string{"a", "a_b", "hello", "notes"}
	for _, tc := range []struct{ check, want string }{
		{"extension hello", "hello"},
		{"extension a_b", "a_b"},
		{"hello", "hello"},
		{"hello_disk", "hello"},
		{"hello-net", "hello"},
		{"a_b_c", "a_b"},
		{"a_c", "a"},
		{"helloworld", ""},
		{"store", ""},
		{"config", ""},
		{"discovery", ""},
	} {
		if got := checkOwner(tc.check, names); got != tc.want {
			t.Errorf("check %q: owner %q, want %q", tc.check, got, tc.want)
		}
	}
}
