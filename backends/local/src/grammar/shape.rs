//! The part of JSON Schema a tool call is held to, compiled into an arena of shapes.
//!
//! Only what shapes a call's syntax is kept: types, string enums, object properties (which keys,
//! which are required), array items, alternatives. Bounds, patterns and formats are left to the
//! tool, which validates its own arguments; anything not understood allows any JSON value, so a
//! schema this reader misjudges can only loosen the grammar, never make a valid call impossible.

use hearth_backend::ToolSpec;
use serde_json::Value;

/// Index of a shape in [`Shapes`].
pub(crate) type ShapeId = u32;

/// Objects with more properties than this are treated as free-form (the matcher tracks the
/// keys already written in a 64-bit set).
const MAX_PROPERTIES: usize = 64;
/// Schemas nested deeper than this allow any value below.
const MAX_DEPTH: usize = 16;
/// An enum longer than this is held only to being a string (each byte of an enum value is
/// checked against every option, and tool schemas come from MCP servers nobody vetted).
const MAX_ENUM: usize = 1024;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// Any JSON value.
    Any,
    String,
    /// One of these strings exactly.
    Enum(Vec<String>),
    Integer,
    Number,
    Boolean,
    Null,
    Array(ShapeId),
    Object(ObjectShape),
    /// Any object, with free keys and values.
    FreeObject,
    OneOf(Vec<ShapeId>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ObjectShape {
    pub props: Vec<(String, ShapeId)>,
    /// Bit `i` set: `props[i]` must be written before the object closes.
    pub required: u64,
    /// Keys must come in the order of `props` (the call envelope: `name` before `arguments`).
    pub ordered: bool,
    /// The call envelope: `props[0]` is the enum of tool names, and the value of `props[1]`
    /// is held to the schema of the tool the name picked (`dispatch[i]` for name `i`).
    pub dispatch: Option<Vec<ShapeId>>,
}

/// The shape every grammar has at index 0: what a free-form object's values and an untyped
/// array's items are held to.
pub(crate) const ANY: ShapeId = 0;

/// Every shape of one grammar, and its root.
#[derive(Debug, Clone)]
pub(crate) struct Shapes {
    arena: Vec<Shape>,
    root: ShapeId,
}

impl Default for Shapes {
    fn default() -> Self {
        Self {
            arena: vec![Shape::Any],
            root: ANY,
        }
    }
}

impl Shapes {
    /// The Hermes call envelope for `tools`: `{"name": <one tool>, "arguments": <its schema>}`.
    /// Properties are closed: a key the schema does not declare cannot be written, because small
    /// models invent keys (`file_path` for `path`) far more often than tools accept extra ones.
    ///
    /// The name is one enum and the arguments follow the tool it names, rather than one
    /// alternative per tool, so the matcher follows one state however many tools there are.
    pub fn for_calls(tools: &[ToolSpec]) -> Self {
        let mut shapes = Self::default();
        let names = tools.iter().map(|t| t.name.clone()).collect();
        let name = shapes.push(Shape::Enum(names));
        let dispatch = tools
            .iter()
            .map(|tool| shapes.compile(&tool.parameters, 0))
            .collect();
        shapes.root = shapes.push(Shape::Object(ObjectShape {
            props: vec![("name".to_string(), name), ("arguments".to_string(), ANY)],
            required: 0b11,
            ordered: true,
            dispatch: Some(dispatch),
        }));
        shapes
    }

    /// A grammar whose root is the schema itself (tests).
    #[cfg(test)]
    pub fn for_schema(schema: &Value) -> Self {
        let mut shapes = Self::default();
        shapes.root = shapes.compile(schema, 0);
        shapes
    }

    pub fn root(&self) -> ShapeId {
        self.root
    }

    pub fn get(&self, id: ShapeId) -> &Shape {
        &self.arena[id as usize]
    }

    fn push(&mut self, shape: Shape) -> ShapeId {
        self.arena.push(shape);
        (self.arena.len() - 1) as ShapeId
    }

    fn compile(&mut self, schema: &Value, depth: usize) -> ShapeId {
        let shape = if depth > MAX_DEPTH {
            Shape::Any
        } else {
            self.shape_of(schema, depth)
        };
        self.push(shape)
    }

    fn shape_of(&mut self, schema: &Value, depth: usize) -> Shape {
        let Some(obj) = schema.as_object() else {
            return Shape::Any;
        };
        if let Some(value) = obj.get("const") {
            return match value.as_str() {
                Some(s) => Shape::Enum(vec![s.to_string()]),
                None => Shape::Any,
            };
        }
        if let Some(Value::Array(values)) = obj.get("enum") {
            let strings: Option<Vec<String>> = values
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect();
            return match strings {
                Some(s) if s.len() > MAX_ENUM => Shape::String,
                Some(s) if !s.is_empty() => Shape::Enum(s),
                _ => Shape::Any,
            };
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = obj.get(key) {
                let ids = options.iter().map(|o| self.compile(o, depth + 1)).collect();
                return Shape::OneOf(ids);
            }
        }
        match obj.get("type") {
            Some(Value::String(kind)) => self.typed(kind, obj, depth),
            Some(Value::Array(kinds)) => {
                let ids = kinds
                    .iter()
                    .map(|k| {
                        let shape = match k.as_str() {
                            Some(kind) => self.typed(kind, obj, depth),
                            None => Shape::Any,
                        };
                        self.push(shape)
                    })
                    .collect();
                Shape::OneOf(ids)
            }
            _ => Shape::Any,
        }
    }

    fn typed(&mut self, kind: &str, obj: &serde_json::Map<String, Value>, depth: usize) -> Shape {
        match kind {
            "string" => Shape::String,
            "integer" => Shape::Integer,
            "number" => Shape::Number,
            "boolean" => Shape::Boolean,
            "null" => Shape::Null,
            "array" => {
                let item = match obj.get("items") {
                    Some(items) => self.compile(items, depth + 1),
                    None => self.push(Shape::Any),
                };
                Shape::Array(item)
            }
            "object" => self.object(obj, depth),
            _ => Shape::Any,
        }
    }

    fn object(&mut self, obj: &serde_json::Map<String, Value>, depth: usize) -> Shape {
        // No `properties`: a free-form object. Empty `properties`: a tool without arguments,
        // whose only object is `{}`.
        let Some(Value::Object(properties)) = obj.get("properties") else {
            return Shape::FreeObject;
        };
        if properties.len() > MAX_PROPERTIES {
            return Shape::FreeObject;
        }
        let required: Vec<&str> = match obj.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut shape = ObjectShape {
            props: Vec::with_capacity(properties.len()),
            required: 0,
            ordered: false,
            dispatch: None,
        };
        for (i, (name, schema)) in properties.iter().enumerate() {
            let id = self.compile(schema, depth + 1);
            shape.props.push((name.clone(), id));
            if required.contains(&name.as_str()) {
                shape.required |= 1 << i;
            }
        }
        Shape::Object(shape)
    }
}
