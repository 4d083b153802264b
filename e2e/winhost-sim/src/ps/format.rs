//! Default output formatting of values written to stdout: scalars one per line (a DateTime in its long en-US form),
//! objects in list view (`Name : value`, names padded). PowerShell's table view for objects with four or fewer
//! properties and the per-type views of formatting files are not modelled: product scripts print JSON or pipe to
//! `Out-Null`.

use super::value::{CivilTime, Value};

/// Formats output items as the console host prints them (CRLF lines).
pub fn format_output(items: &[Value]) -> String {
    let mut text = String::new();
    for item in items {
        match item {
            Value::Null => {}
            Value::DateTime(millis) => {
                text.push_str(&CivilTime::from_millis(*millis).long_text());
                text.push_str("\r\n");
            }
            Value::Array(inner) => text.push_str(&format_output(inner)),
            Value::Object(object) => {
                let width = object.properties.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
                text.push_str("\r\n");
                for (name, value) in &object.properties {
                    let shown = match value {
                        Value::Array(values) => {
                            format!("{{{}}}", values.iter().map(Value::to_text).collect::<Vec<_>>().join(", "))
                        }
                        other => other.to_text(),
                    };
                    text.push_str(&format!("{name:<width$} : {shown}\r\n"));
                }
                text.push_str("\r\n");
            }
            scalar => {
                text.push_str(&scalar.to_text());
                text.push_str("\r\n");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ps::value::Object;

    #[test]
    fn scalars_and_objects() {
        let object = Value::Object(Box::new(Object::typed(
            "X",
            vec![("Name", Value::str("a")), ("Enabled", Value::Bool(true))],
        )));
        assert_eq!(
            format_output(&[Value::Bool(true), Value::Null, Value::Int(3), object, Value::DateTime(0)]),
            "True\r\n3\r\n\r\nName    : a\r\nEnabled : True\r\n\r\nThursday, January 1, 1970 12:00:00 AM\r\n"
        );
    }
}
