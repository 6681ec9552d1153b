package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/permission"
)

// The document names every route with its method, and nothing else.
func TestTheOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	f := newFixture(t)
	status, body := f.do("GET", "/openapi.json", "")
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	mustJSON(t, body, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var inDoc, routed []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			inDoc = append(inDoc, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range f.srv.routes() {
		routed = append(routed, rt.method+" "+strings.ReplaceAll(rt.path, "...}", "}"))
	}
	slices.Sort(inDoc)
	slices.Sort(routed)
	if !slices.Equal(inDoc, routed) {
		t.Fatalf("the document describes\n%s\nthe server routes\n%s", strings.Join(inDoc, "\n"), strings.Join(routed, "\n"))
	}
	// every operation answers something other than the catch-all's 404
	for _, rt := range f.srv.routes() {
		path := strings.NewReplacer("{id}", "x", "{tid}", "y", "{name}", "z", "{path...}", ".myelin/tool-results/none").Replace(rt.path)
		req, _ := http.NewRequest(rt.method, path, nil)
		if _, pattern := f.srv.mux.Handler(req); pattern != rt.method+" "+rt.path {
			t.Errorf("%s %s is routed to %q", rt.method, path, pattern)
		}
	}
}

// eventData are the event types a conversation's stream carries, each
// with (a zero value of) the type of its data.
var eventData = map[string]any{
	EventTurnStarted:         turnStartedEvent{},
	EventModelDelta:          modelDeltaEvent{},
	EventToolStarted:         toolStartedEvent{},
	EventToolFinished:        toolFinishedEvent{},
	EventUsage:               usageEvent{},
	EventMessageStored:       messageStoredEvent{},
	EventNotice:              noticeEvent{},
	EventWaiting:             waitingEvent{},
	EventContextCleared:      contextEvent{},
	EventContextSummarised:   contextEvent{},
	EventContextWithheld:     contextEvent{},
	EventError:               errorEvent{},
	EventTurnFinished:        turnFinishedEvent{},
	EventLost:                lostEvent{},
	EventElicitation:         elicitationEvent{},
	EventElicitationAnswered: elicitationEndedEvent{},
	EventElicitationExpired:  elicitationEndedEvent{},
	EventElicitationReply:    elicitationReply{},
	EventApproval:            approvalEvent{},
	EventApprovalAnswered:    approvalEndedEvent{},
	EventApprovalExpired:     approvalEndedEvent{},
	EventApprovalReply:       approvalReply{},
	EventSampling:            samplingEvent{},
	EventSamplingFinished:    samplingFinishedEvent{},
	EventWake:                background.Wake{},
	EventRewound:             rewoundEvent{},
	EventSwitched:            switchedEvent{},
}

// schemaOf is the JSON Schema of what encoding/json makes of t: the
// types, properties and required properties (those without omitempty),
// as the document must describe them.
func schemaOf(t reflect.Type) map[string]any {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return map[string]any{} // any JSON value
	case t == reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		var required []any
		var add func(reflect.Type)
		add = func(t reflect.Type) {
			for f := range t.Fields() {
				tag := f.Tag.Get("json")
				name, opts, _ := strings.Cut(tag, ",")
				if !f.IsExported() || name == "-" {
					continue
				}
				if f.Anonymous && name == "" {
					add(f.Type)
					continue
				}
				if name == "" {
					name = f.Name
				}
				props[name] = schemaOf(f.Type)
				if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
					required = append(required, name)
				}
			}
		}
		add(t)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	panic(fmt.Sprintf("schemaOf: no schema for %s", t))
}

// bare is a schema without its descriptions, its required properties in
// order, for comparing what it says of the JSON.
func bare(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			switch k {
			case "description", "title", "examples", "enum":
				continue
			case "properties": // names, not keywords
				props := map[string]any{}
				for name, p := range x.(map[string]any) {
					props[name] = bare(p)
				}
				out[k] = props
				continue
			case "required":
				var names []string
				for _, n := range x.([]any) {
					names = append(names, n.(string))
				}
				slices.Sort(names)
				x = names
			}
			out[k] = bare(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = bare(x)
		}
		return out
	}
	return v
}

// loadOpenAPI is the document as kin-openapi reads it, and as JSON.
func loadOpenAPI(t *testing.T) (*openapi3.T, map[string]any) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openAPI)
	if err != nil {
		t.Fatalf("the OpenAPI document does not load: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(openAPI, &raw); err != nil {
		t.Fatal(err)
	}
	return doc, raw
}

// Issue 27 §15: a client generated from /openapi.json (oapi-codegen) got
// no method names, no error answers and untyped events. The document
// passes an OpenAPI 3.1 validator, names a server, and gives every
// operation a unique operationId and the 4xx answers it may give.
func TestTheOpenAPIDocumentLintsWithNamedOperationsAndTheirErrors(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document does not validate: %v", err)
	}
	if len(doc.Servers) == 0 || doc.Servers[0].URL == "" {
		t.Error("the document names no server (servers): a generated client has no base URL")
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId: a generated client names its method after the path", where)
			} else if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s and %s share the operationId %q", where, other, op.OperationID)
			}
			ids[op.OperationID] = where
			has4xx := false
			for code := range op.Responses.Map() {
				has4xx = has4xx || strings.HasPrefix(code, "4")
			}
			if !has4xx {
				t.Errorf("%s lists no 4xx answer", where)
			}
			if strings.HasPrefix(path, "/v1/") && op.Responses.Status(401) == nil {
				t.Errorf("%s does not list 401, which every /v1 request gets without the server's token", where)
			}
		}
	}
}

// Every event type the stream carries has its data's schema in the
// document (components.schemas.Events names each, by type), and that
// schema says what encoding/json makes of the Go type the server emits:
// the same properties, of the same types, the same ones required.
func TestTheOpenAPIDocumentTypesEveryEventsData(t *testing.T) {
	if os.Getenv("MYELIN_PRINT_EVENT_SCHEMAS") != "" { // to write new ones into the document
		out := map[string]any{}
		for typ, v := range eventData {
			out[typ] = schemaOf(reflect.TypeOf(v))
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		os.WriteFile(os.Getenv("MYELIN_PRINT_EVENT_SCHEMAS"), b, 0o644)
	}
	_, raw := loadOpenAPI(t)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	events, _ := schemas["Events"].(map[string]any)
	if events == nil {
		t.Fatal("components.schemas has no Events: the types of the event stream's data")
	}
	props, _ := events["properties"].(map[string]any)
	var inDoc, emitted []string
	for typ := range props {
		inDoc = append(inDoc, typ)
	}
	for typ := range eventData {
		emitted = append(emitted, typ)
	}
	slices.Sort(inDoc)
	slices.Sort(emitted)
	if !slices.Equal(inDoc, emitted) {
		t.Fatalf("Events describes %v; the stream carries %v", inDoc, emitted)
	}
	for typ, v := range eventData {
		ref, _ := props[typ].(map[string]any)["$ref"].(string)
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if !ok || schemas[name] == nil {
			t.Errorf("Events.%s is %v, not a reference to a schema of components.schemas", typ, props[typ])
			continue
		}
		got, _ := json.Marshal(bare(schemas[name]))
		want, _ := json.Marshal(bare(schemaOf(reflect.TypeOf(v))))
		if string(got) != string(want) {
			t.Errorf("the data of %s (%s, the Go type %T):\n the document says %s\n the server sends  %s", typ, name, v, got, want)
		}
	}
}

// A stored call's decision (permission.Record, on its result's part) is
// typed in the document as the store encodes it, and the stored
// message's parts name it, so a generated client reads the audit trail.
func TestTheOpenAPIDocumentTypesAStoredCallsPermission(t *testing.T) {
	_, raw := loadOpenAPI(t)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	got, _ := json.Marshal(bare(schemas["Permission"]))
	want, _ := json.Marshal(bare(schemaOf(reflect.TypeFor[permission.Record]())))
	if string(got) != string(want) {
		t.Fatalf("Permission:\n the document says %s\n the store keeps   %s", got, want)
	}
	ref := schemas["StoredMessage"].(map[string]any)["properties"].(map[string]any)["message"]
	for _, k := range []string{"properties", "parts", "items", "properties", "permission", "$ref"} {
		m, _ := ref.(map[string]any)
		ref = m[k]
	}
	if ref != "#/components/schemas/Permission" {
		t.Fatalf("StoredMessage.message.parts[].permission is %v, not a reference to Permission", ref)
	}
}

// resolved is schema v of the document with its references replaced by
// what they name and an allOf merged into one object, for comparing with
// schemaOf; keywords that only narrow a value (minimum,
// additionalProperties: false) are left out.
func resolved(schemas map[string]any, v any) any {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return resolved(schemas, schemas[strings.TrimPrefix(ref, "#/components/schemas/")])
		}
		if all, ok := v["allOf"].([]any); ok {
			props, required := map[string]any{}, []any{}
			for _, part := range all {
				p := resolved(schemas, part).(map[string]any)
				for k, x := range p["properties"].(map[string]any) {
					props[k] = x
				}
				if r, ok := p["required"].([]any); ok {
					required = append(required, r...)
				}
			}
			return map[string]any{"type": "object", "properties": props, "required": required}
		}
		out := map[string]any{}
		for k, x := range v {
			if k == "minimum" || (k == "additionalProperties" && x == false) {
				continue
			}
			out[k] = resolved(schemas, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = resolved(schemas, x)
		}
		return out
	}
	return v
}

// The answers and bodies of the conversations' endpoints, forks and
// branches among them, are typed in the document as the server encodes
// and decodes them: a generated client reads base, base_at, branch_of
// and branches, and sends what the endpoints take.
func TestTheOpenAPIDocumentTypesTheConversationsAndTheirBranches(t *testing.T) {
	_, raw := loadOpenAPI(t)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	for name, v := range map[string]any{
		"Conversation": ConversationInfo{},
		"BranchRef":    BranchRef{},
		"Branch":       Branch{},
		"Rewound":      Rewound{},
		"Switched":     Switched{},
		"FilesReport":  FilesReport{},
		"ForkInput":    ForkInput{},
		"RewindInput":  RewindInput{},
		"FilesInput":   FilesInput{},
		"SwitchInput":  SwitchInput{},
	} {
		if schemas[name] == nil {
			t.Errorf("components.schemas has no %s (the Go type %T)", name, v)
			continue
		}
		got, _ := json.Marshal(bare(resolved(schemas, schemas[name])))
		want, _ := json.Marshal(bare(schemaOf(reflect.TypeOf(v))))
		if string(got) != string(want) {
			t.Errorf("%s (the Go type %T):\n the document says %s\n the server uses    %s", name, v, got, want)
		}
	}
}

// The turn body's schema names the Go type's fields with their types, so
// a field the server reads is one a generated client can send.
func TestTheOpenAPIDocumentTypesTheTurnBody(t *testing.T) {
	_, raw := loadOpenAPI(t)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	typesOf := func(schema any) map[string]any {
		out := map[string]any{}
		for name, p := range schema.(map[string]any)["properties"].(map[string]any) {
			out[name] = p.(map[string]any)["type"]
		}
		return out
	}
	got, want := typesOf(schemas["TurnInput"]), typesOf(schemaOf(reflect.TypeFor[TurnInput]()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TurnInput's properties:\n the document says %v\n the server reads  %v", got, want)
	}
}
