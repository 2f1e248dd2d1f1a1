package rawjson_test

import (
	"fmt"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// Writing an object, as the package documentation shows it.
func ExampleObject() {
	buf := make([]byte, 0, 128)
	o := rawjson.Begin(buf[:0])
	o.String("kind", "answer")
	o.StringOmit("reason", "") // left out when empty, as omitempty
	o.Raw("value", []byte(`{ "ok" : true }`))
	buf = o.End()
	fmt.Println(string(buf))
	// Output:
	// {"kind":"answer","value":{"ok":true}}
}

// Reading an object's fields in one pass that also checks it is JSON.
func ExampleFields() {
	ok := rawjson.Fields([]byte(`{"type":"progress","percent":30}`), func(key, value []byte) bool {
		fmt.Printf("%s = %s\n", key, value)
		return true
	})
	fmt.Println("walked:", ok, "· not JSON:", rawjson.Fields([]byte(`{"type":`), func(_, _ []byte) bool { return true }))
	// Output:
	// type = "progress"
	// percent = 30
	// walked: true · not JSON: false
}
