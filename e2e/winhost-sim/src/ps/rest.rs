//! `Invoke-RestMethod` (Windows PowerShell 5.1) against the cloud metadata services a host reaches
//! ([`crate::metadata`]): `-Uri U [-Method Get|Put] [-Headers @{...}] [-UseBasicParsing] [-TimeoutSec N]`. A
//! text answer is returned as a string (what 5.1 does for a body that is neither JSON nor XML, as both services'
//! names are). A request that gets no answer is a terminating error, as 5.1 throws it (`ThrowTerminatingError`):
//! category `InvalidOperation`, FullyQualifiedErrorId `WebCmdletWebResponseException`, the `WebException`'s message.
//! Parameters outside these forms are refused by name (never ignored).

use super::eval::{Arguments, Flow, PsError, Session};
use super::value::{Object, Value};
use crate::metadata::WebRequest;

/// The cmdlet's name in error records.
const NAME: &str = "Invoke-RestMethod";
/// Its FullyQualifiedErrorId suffix.
const COMMAND_TYPE: &str = "Microsoft.PowerShell.Commands.InvokeRestMethodCommand";
/// The parameters modelled (lower case).
const PARAMETERS: [&str; 5] = ["uri", "method", "headers", "usebasicparsing", "timeoutsec"];
/// The `-Method` values 5.1 accepts (`WebRequestMethod`); the services answer GET and PUT only.
const METHODS: [&str; 10] = ["Default", "Get", "Head", "Post", "Put", "Delete", "Trace", "Options", "Merge", "Patch"];

fn terminating(message: impl Into<String>, category: &str, exception: &str, id: &str, target: &str) -> Flow {
    let error = PsError::new(NAME, message, category, exception, &format!("{id},{COMMAND_TYPE}"), target);
    Flow::Error { error: Box::new(error), script: false }
}

/// Runs `Invoke-RestMethod` with its bound `arguments`.
///
/// # Errors
/// A terminating error for an unusable parameter or a request without an answer.
pub fn invoke_rest_method(session: &mut Session<'_>, arguments: &Arguments) -> Result<Vec<Value>, Flow> {
    if let Some((name, _)) = arguments.named.iter().find(|(name, _)| !PARAMETERS.contains(&name.as_str())) {
        return Err(terminating(
            format!("the simulator does not model parameter -{name} of {NAME}"),
            "NotImplemented",
            "NotSupportedException",
            "ParameterNotModelled",
            "",
        ));
    }
    let Some(uri) = arguments.text("uri", Some(0)).filter(|uri| !uri.is_empty()) else {
        return Err(terminating(
            "Cannot validate argument on parameter 'Uri'. The argument is null or empty.",
            "InvalidData",
            "ParameterBindingValidationException",
            "ParameterArgumentValidationError",
            "",
        ));
    };
    let method = arguments.text("method", None).unwrap_or_else(|| "Default".to_owned());
    let Some(method) = METHODS.iter().find(|known| known.eq_ignore_ascii_case(&method)) else {
        return Err(terminating(
            format!(
                "Cannot bind parameter 'Method'. Cannot convert value \"{method}\" to type \
                 \"Microsoft.PowerShell.Commands.WebRequestMethod\"."
            ),
            "InvalidArgument",
            "ParameterBindingException",
            "CannotConvertArgumentNoMessage",
            "",
        ));
    };
    let method = if *method == "Default" { "GET".to_owned() } else { method.to_ascii_uppercase() };
    let headers = match arguments.get("headers") {
        Some(Value::Object(table)) => header_pairs(table),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => {
            return Err(terminating(
                format!(
                    "Cannot bind parameter 'Headers'. Cannot convert the \"{}\" value of type \"System.String\" to \
                     type \"System.Collections.IDictionary\".",
                    other.to_text()
                ),
                "InvalidArgument",
                "ParameterBindingException",
                "CannotConvertArgumentNoMessage",
                "",
            ));
        }
    };
    let request = WebRequest { method: &method, uri: &uri, headers: &headers };
    match session.host.instance_metadata.answer(request) {
        Ok(body) => Ok(vec![Value::Str(body)]),
        Err(failure) => Err(terminating(
            failure.message(),
            "InvalidOperation",
            "WebException",
            "WebCmdletWebResponseException",
            "System.Net.HttpWebRequest",
        )),
    }
}

/// A hashtable's entries as header name and value text.
fn header_pairs(table: &Object) -> Vec<(String, String)> {
    table.properties.iter().map(|(name, value)| (name.clone(), value.to_text())).collect()
}
