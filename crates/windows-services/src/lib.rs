//! Typed desired state of a Windows host, the sc.exe / PowerShell command builders and their output parsers.
