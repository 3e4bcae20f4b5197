//! Plugin parameters: a plugin's `params` JSON Schema and the values a hardware profile passes.
//!
//! A documented subset of JSON Schema (draft 2020-12 keywords, no `$ref`, so nothing is ever
//! fetched): `type`, `properties`, `required`, `additionalProperties` (boolean), `items`,
//! `enum`, `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`, and the
//! annotations `title`, `description`, `default`, `examples`. A schema with any other keyword is
//! refused at upload, so no rule is silently ignored.

use serde_json::{Map, Value};

const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "title",
    "description",
    "default",
    "examples",
    "$schema",
];
const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean", "null"];
/// Nesting a schema may have.
const MAX_DEPTH: usize = 16;
/// Largest parameter document passed to a plugin, bytes of JSON.
pub const MAX_PARAMS_BYTES: usize = 64 * 1024;

/// Checks that `schema` uses only the supported keywords, correctly typed.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    check_at(schema, "", 0)
}

fn check_at(s: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: nested deeper than {MAX_DEPTH}"));
    }
    let obj = s.as_object().ok_or_else(|| format!("{}: a schema must be an object", here(at)))?;
    for (k, v) in obj {
        if !KEYWORDS.contains(&k.as_str()) {
            return Err(format!("{}: keyword {k:?} is not supported", here(at)));
        }
        let ok = match k.as_str() {
            "type" => v.as_str().is_some_and(|t| TYPES.contains(&t)),
            "required" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            "additionalProperties" => v.is_boolean(),
            "enum" => v.is_array(),
            "minimum" | "maximum" => v.is_number(),
            "minLength" | "maxLength" | "minItems" | "maxItems" => v.is_u64(),
            "properties" => {
                let props = v.as_object().ok_or_else(|| format!("{}: properties must be an object", here(at)))?;
                for (name, sub) in props {
                    check_at(sub, &format!("{at}/{name}"), depth + 1)?;
                }
                true
            }
            "items" => {
                check_at(v, &format!("{at}/items"), depth + 1)?;
                true
            }
            _ => true,
        };
        if !ok {
            return Err(format!("{}: {k} has the wrong type", here(at)));
        }
    }
    Ok(())
}

fn here(at: &str) -> &str {
    if at.is_empty() {
        "/"
    } else {
        at
    }
}

/// Checks `value` against `schema` (already checked); the error names the first failing place.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    if serde_json::to_vec(value).map_or(true, |b| b.len() > MAX_PARAMS_BYTES) {
        return Err(format!("parameters larger than {MAX_PARAMS_BYTES} bytes"));
    }
    validate_at(schema.as_object().unwrap_or(&Map::new()), value, "")
}

fn validate_at(s: &Map<String, Value>, v: &Value, at: &str) -> Result<(), String> {
    let fail = |why: String| Err(format!("{}: {why}", here(at)));
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            _ => v.is_null(),
        };
        if !ok {
            return fail(format!("must be {t}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return fail(format!("must be one of {}", Value::Array(e.clone())));
        }
    }
    if let Some(n) = v.as_f64() {
        if s.get("minimum").and_then(Value::as_f64).is_some_and(|m| n < m) {
            return fail(format!("must be at least {}", s["minimum"]));
        }
        if s.get("maximum").and_then(Value::as_f64).is_some_and(|m| n > m) {
            return fail(format!("must be at most {}", s["maximum"]));
        }
    }
    if let Some(text) = v.as_str() {
        let len = text.chars().count() as u64;
        if s.get("minLength").and_then(Value::as_u64).is_some_and(|m| len < m) {
            return fail(format!("must be at least {} characters", s["minLength"]));
        }
        if s.get("maxLength").and_then(Value::as_u64).is_some_and(|m| len > m) {
            return fail(format!("must be at most {} characters", s["maxLength"]));
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as u64;
        if s.get("minItems").and_then(Value::as_u64).is_some_and(|m| len < m) {
            return fail(format!("needs at least {} items", s["minItems"]));
        }
        if s.get("maxItems").and_then(Value::as_u64).is_some_and(|m| len > m) {
            return fail(format!("takes at most {} items", s["maxItems"]));
        }
        if let Some(sub) = s.get("items").and_then(Value::as_object) {
            for (i, item) in items.iter().enumerate() {
                validate_at(sub, item, &format!("{at}/{i}"))?;
            }
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                return fail(format!("{r:?} is required"));
            }
        }
        for (k, item) in obj {
            match props.and_then(|p| p.get(k)).and_then(Value::as_object) {
                Some(sub) => validate_at(sub, item, &format!("{at}/{k}"))?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return fail(format!("{k:?} is not a known parameter"))
                }
                None => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raid() -> Value {
        json!({"type": "object", "required": ["disks"], "additionalProperties": false,
            "properties": {"disks": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string", "minLength": 1}},
                "level": {"enum": ["raid1"]}, "chunk_kib": {"type": "integer", "minimum": 4, "maximum": 1024}}})
    }

    #[test]
    fn good_parameters_pass() {
        check_schema(&raid()).unwrap();
        validate(&raid(), &json!({"disks": ["/dev/vdb", "/dev/vdc"], "level": "raid1", "chunk_kib": 64})).unwrap();
    }

    #[test]
    fn bad_parameters_name_the_place() {
        let cases = [
            (json!({}), "\"disks\" is required"),
            (json!({"disks": ["/dev/vdb"]}), "/disks: needs at least 2"),
            (json!({"disks": ["a", 3]}), "/disks/1: must be string"),
            (json!({"disks": ["a", "b"], "level": "raid5"}), "/level: must be one of"),
            (json!({"disks": ["a", "b"], "chunk_kib": 2}), "/chunk_kib: must be at least 4"),
            (json!({"disks": ["a", "b"], "force": true}), "\"force\" is not a known parameter"),
            (json!("text"), "/: must be object"),
        ];
        for (v, want) in cases {
            let err = validate(&raid(), &v).unwrap_err();
            assert!(err.contains(want), "{v}: {err}");
        }
    }

    #[test]
    fn unsupported_keywords_are_refused() {
        let err = check_schema(&json!({"type": "object", "properties": {"a": {"$ref": "http://x/y"}}})).unwrap_err();
        assert!(err.contains("/a: keyword \"$ref\" is not supported"), "{err}");
        assert!(check_schema(&json!({"type": "thing"})).unwrap_err().contains("type has the wrong type"));
    }
}
