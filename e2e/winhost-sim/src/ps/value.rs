//! PowerShell values of the simulated interpreter: scalars, arrays, property bags (hashtables, ordered
//! dictionaries, PSCustomObjects and typed objects such as `Win32_Service` instances), enums (a name and a number),
//! DateTimes, and script blocks; their truthiness, `ToString()` text, comparisons, and `ConvertTo-Json` in Windows
//! PowerShell 5.1's format (windows-commands.md §4: depth cut-off to `ToString()` text, enums as numbers, DateTime as
//! `"\/Date(<ms>)\/"`, 4-space indent and two spaces after the colon, `-Compress`).

use std::rc::Rc;

use super::ast::Block;

/// What kind of property bag an object is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// `@{...}`.
    Hashtable,
    /// `[ordered]@{...}`.
    Ordered,
    /// `[pscustomobject]@{...}`.
    Custom,
    /// An object a cmdlet returned, with its .NET type name.
    Typed(String),
    /// An ErrorRecord (`$_` in `catch`): its text is the exception's message.
    ErrorRecord,
}

/// A property bag.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The kind.
    pub kind: ObjectKind,
    /// Properties in order (names case-insensitive).
    pub properties: Vec<(String, Value)>,
}

impl Object {
    /// A typed object with `properties`.
    pub fn typed(type_name: &str, properties: Vec<(&str, Value)>) -> Object {
        Object {
            kind: ObjectKind::Typed(type_name.to_owned()),
            properties: properties.into_iter().map(|(name, value)| (name.to_owned(), value)).collect(),
        }
    }

    /// A property by name (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.properties.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value)
    }
}

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `$null`.
    Null,
    /// `$true` / `$false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// A property bag.
    Object(Box<Object>),
    /// An enum value: its name and number.
    Enum(String, i64),
    /// A `System.DateTime`: milliseconds since the Unix epoch, UTC (simulated hosts keep UTC as their time zone).
    DateTime(i64),
    /// `{ ... }`.
    Block(Rc<Block>),
}

impl Value {
    /// A string value.
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(text.into())
    }

    /// An enum value.
    pub fn enumeration(name: &str, number: i64) -> Value {
        Value::Enum(name.to_owned(), number)
    }

    /// PowerShell's conversion to bool.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(flag) => *flag,
            Value::Int(number) => *number != 0,
            Value::Str(text) => !text.is_empty(),
            Value::Array(items) => match items.as_slice() {
                [] => false,
                [single] => single.truthy(),
                _ => true,
            },
            Value::Enum(_, number) => *number != 0,
            Value::DateTime(_) | Value::Object(_) | Value::Block(_) => true,
        }
    }

    /// `ToString()` as 5.1 renders it.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Bool(true) => "True".to_owned(),
            Value::Bool(false) => "False".to_owned(),
            Value::Int(number) => number.to_string(),
            Value::Str(text) => text.clone(),
            Value::Array(items) => items.iter().map(Value::to_text).collect::<Vec<_>>().join(" "),
            Value::Enum(name, _) => name.clone(),
            Value::DateTime(millis) => CivilTime::from_millis(*millis).short_text(),
            Value::Block(block) => block.source.clone(),
            Value::Object(object) => match &object.kind {
                ObjectKind::Hashtable => "System.Collections.Hashtable".to_owned(),
                ObjectKind::Ordered => "System.Collections.Specialized.OrderedDictionary".to_owned(),
                ObjectKind::Custom => {
                    let fields: Vec<String> =
                        object.properties.iter().map(|(name, value)| format!("{name}={}", value.to_text())).collect();
                    format!("@{{{}}}", fields.join("; "))
                }
                ObjectKind::Typed(type_name) => type_name.clone(),
                ObjectKind::ErrorRecord => error_record_text(object),
            },
        }
    }

    /// A property (`.Name`): properties of objects, `Count`/`Length` of arrays and strings, member enumeration
    /// over arrays; `$null` for anything missing.
    pub fn member(&self, name: &str) -> Value {
        match self {
            Value::Object(object) => object.get(name).cloned().unwrap_or(Value::Null),
            Value::Array(items) if name.eq_ignore_ascii_case("count") || name.eq_ignore_ascii_case("length") => {
                Value::Int(i64::try_from(items.len()).unwrap_or(i64::MAX))
            }
            Value::Array(items) => {
                let values: Vec<Value> =
                    items.iter().map(|item| item.member(name)).filter(|value| *value != Value::Null).collect();
                match values.len() {
                    0 => Value::Null,
                    1 => values.into_iter().next().unwrap_or(Value::Null),
                    _ => Value::Array(values),
                }
            }
            Value::Str(text) if name.eq_ignore_ascii_case("length") => {
                Value::Int(i64::try_from(text.chars().count()).unwrap_or(i64::MAX))
            }
            Value::Null => Value::Null,
            _ if name.eq_ignore_ascii_case("count") => Value::Int(1),
            Value::Enum(_, number) if name.eq_ignore_ascii_case("value__") => Value::Int(*number),
            _ => Value::Null,
        }
    }

    /// The items a pipeline enumerates from this value.
    pub fn enumerate(self) -> Vec<Value> {
        match self {
            Value::Array(items) => items,
            other => vec![other],
        }
    }

    /// `-eq` between two scalars (strings case-insensitively, the right side converted to the left's type).
    pub fn equals(&self, right: &Value) -> bool {
        match (self, right) {
            (Value::Null, other) | (other, Value::Null) => matches!(other, Value::Null),
            (Value::Bool(flag), other) => *flag == other.truthy(),
            (Value::Int(number), other) => other.as_int() == Some(*number),
            (Value::Enum(name, number), other) => match other {
                Value::Int(value) | Value::Enum(_, value) => value == number,
                other => other.to_text().eq_ignore_ascii_case(name),
            },
            (Value::DateTime(left), Value::DateTime(right)) => left == right,
            (left, other) => left.to_text().eq_ignore_ascii_case(&other.to_text()),
        }
    }

    /// The value as an integer, if it is one or a string holding one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(number) | Value::Enum(_, number) => Some(*number),
            Value::Bool(flag) => Some(i64::from(*flag)),
            Value::Str(text) => text.trim().parse().ok(),
            _ => None,
        }
    }
}

/// The UTC calendar fields of a [`Value::DateTime`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CivilTime {
    /// The year.
    pub year: i64,
    /// 1–12.
    pub month: i64,
    /// 1–31.
    pub day: i64,
    /// 0–23.
    pub hour: i64,
    /// 0–59.
    pub minute: i64,
    /// 0–59.
    pub second: i64,
    /// 0 = Sunday … 6 = Saturday.
    pub weekday: i64,
}

impl CivilTime {
    /// The calendar fields of `millis` since the Unix epoch (proleptic Gregorian, UTC).
    pub fn from_millis(millis: i64) -> CivilTime {
        const DAY_MILLIS: i64 = 86_400_000;
        let days = millis.div_euclid(DAY_MILLIS);
        let seconds_of_day = millis.rem_euclid(DAY_MILLIS) / 1000;
        // Days to a civil date (H. Hinnant's `civil_from_days`), counting from 0000-03-01.
        let shifted = days + 719_468;
        let era = shifted.div_euclid(146_097);
        let day_of_era = shifted.rem_euclid(146_097);
        let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let march_month = (5 * day_of_year + 2) / 153;
        let month = if march_month < 10 { march_month + 3 } else { march_month - 9 };
        CivilTime {
            year: year_of_era + era * 400 + i64::from(month <= 2),
            month,
            day: day_of_year - (153 * march_month + 2) / 5 + 1,
            hour: seconds_of_day / 3600,
            minute: seconds_of_day / 60 % 60,
            second: seconds_of_day % 60,
            weekday: (days + 4).rem_euclid(7),
        }
    }

    /// `h:mm:ss AM` (en-US long time).
    fn time_text(self) -> String {
        let hour = match self.hour % 12 {
            0 => 12,
            other => other,
        };
        let meridiem = if self.hour < 12 { "AM" } else { "PM" };
        format!("{hour}:{:02}:{:02} {meridiem}", self.minute, self.second)
    }

    /// `ToString()` in en-US: `1/5/2025 3:04:05 PM`.
    pub fn short_text(self) -> String {
        format!("{}/{}/{} {}", self.month, self.day, self.year, self.time_text())
    }

    /// How the console shows a DateTime on its own: `Sunday, January 5, 2025 3:04:05 PM`.
    pub fn long_text(self) -> String {
        const WEEKDAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let weekday = usize::try_from(self.weekday).ok().and_then(|index| WEEKDAYS.get(index)).unwrap_or(&"");
        let month = usize::try_from(self.month - 1).ok().and_then(|index| MONTHS.get(index)).unwrap_or(&"");
        format!("{weekday}, {month} {}, {} {}", self.day, self.year, self.time_text())
    }
}

fn error_record_text(record: &Object) -> String {
    record.get("Exception").map(|exception| exception.member("Message").to_text()).unwrap_or_default()
}

/// `ConvertTo-Json` of 5.1 for one value (`depth`: how many levels of objects are expanded).
pub fn to_json(value: &Value, depth: usize, compress: bool) -> String {
    let mut out = String::new();
    write_json(value, depth, compress, 0, &mut out);
    out
}

fn json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\'' => out.push_str("\\u0027"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn newline(compress: bool, indent: usize, out: &mut String) {
    if !compress {
        out.push_str("\r\n");
        out.push_str(&" ".repeat(indent * 4));
    }
}

fn write_json(value: &Value, depth: usize, compress: bool, indent: usize, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Int(number) | Value::Enum(_, number) => out.push_str(&number.to_string()),
        Value::Str(text) => json_string(text, out),
        Value::DateTime(millis) => out.push_str(&format!("\"\\/Date({millis})\\/\"")),
        Value::Block(block) => json_string(&block.source, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline(compress, indent + 1, out);
                write_json(item, depth, compress, indent + 1, out);
            }
            if !items.is_empty() {
                newline(compress, indent, out);
            }
            out.push(']');
        }
        Value::Object(object) => {
            if depth == 0 {
                json_string(&value.to_text(), out);
                return;
            }
            out.push('{');
            for (index, (name, member)) in object.properties.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline(compress, indent + 1, out);
                json_string(name, out);
                out.push_str(if compress { ":" } else { ":  " });
                let nested_depth = depth - 1;
                match member {
                    Value::Array(items) if nested_depth == 0 => {
                        json_string(&items.iter().map(Value::to_text).collect::<Vec<_>>().join(" "), out);
                    }
                    other => write_json(other, nested_depth, compress, indent + 1, out),
                }
            }
            if !object.properties.is_empty() {
                newline(compress, indent, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: ObjectKind, properties: Vec<(&str, Value)>) -> Value {
        Value::Object(Box::new(Object {
            kind,
            properties: properties.into_iter().map(|(name, value)| (name.to_owned(), value)).collect(),
        }))
    }

    #[test]
    fn json_follows_the_5_1_format() {
        let inner = object(ObjectKind::Custom, vec![("a", Value::Int(1))]);
        let value = object(
            ObjectKind::Ordered,
            vec![
                ("Name", Value::str("kubelet")),
                ("Status", Value::enumeration("Running", 4)),
                ("List", Value::Array(vec![Value::Int(1), Value::Null])),
                ("Nested", object(ObjectKind::Custom, vec![("deep", inner.clone())])),
            ],
        );
        assert_eq!(
            to_json(&value, 2, true),
            r#"{"Name":"kubelet","Status":4,"List":[1,null],"Nested":{"deep":"@{a=1}"}}"#
        );
        assert_eq!(
            to_json(
                &object(ObjectKind::Custom, vec![("Name", Value::str("it's")), ("x", Value::Bool(true))]),
                2,
                false
            ),
            "{\r\n    \"Name\":  \"it\\u0027s\",\r\n    \"x\":  true\r\n}"
        );
        assert_eq!(to_json(&Value::Array(vec![]), 2, true), "[]");
    }

    #[test]
    fn comparisons_members_and_text() {
        assert!(Value::str("Kubelet").equals(&Value::str("kubelet")));
        assert!(Value::Int(4).equals(&Value::str("4")));
        assert!(Value::enumeration("Running", 4).equals(&Value::str("running")));
        assert!(!Value::Null.equals(&Value::str("")));
        let items = Value::Array(vec![
            object(ObjectKind::Custom, vec![("Name", Value::str("a"))]),
            object(ObjectKind::Custom, vec![("Name", Value::str("b"))]),
        ]);
        assert_eq!(items.member("Name"), Value::Array(vec![Value::str("a"), Value::str("b")]));
        assert_eq!(items.member("Count"), Value::Int(2));
        assert_eq!(Value::Bool(false).to_text(), "False");
        assert!(!Value::Array(vec![Value::Bool(false)]).truthy());
    }

    #[test]
    fn date_times_print_in_en_us_and_serialize_as_5_1_date_strings() {
        // 2025-01-05T15:04:05.678Z, a Sunday.
        let boot = Value::DateTime(1_736_089_445_678);
        assert_eq!(boot.to_text(), "1/5/2025 3:04:05 PM");
        assert_eq!(CivilTime::from_millis(1_736_089_445_678).long_text(), "Sunday, January 5, 2025 3:04:05 PM");
        assert_eq!(Value::DateTime(0).to_text(), "1/1/1970 12:00:00 AM");
        assert_eq!(Value::DateTime(951_782_400_000).to_text(), "2/29/2000 12:00:00 AM", "leap day");
        assert_eq!(to_json(&boot, 2, true), r#""\/Date(1736089445678)\/""#);
        let wrapped = object(ObjectKind::Ordered, vec![("boot", boot.clone())]);
        assert_eq!(to_json(&wrapped, 1, false), "{\r\n    \"boot\":  \"\\/Date(1736089445678)\\/\"\r\n}");
        assert!(boot.equals(&Value::DateTime(1_736_089_445_678)));
        assert!(!boot.equals(&Value::DateTime(1_736_089_445_679)));
        assert!(boot.truthy());
    }
}
