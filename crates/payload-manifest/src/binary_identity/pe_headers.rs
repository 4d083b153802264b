//! The PE headers of a binary, read with the `object` crate: its format (PE32 or PE32+), machine and subsystem, and
//! the file ranges of its writable data sections, where the Go linker puts the build information.

use std::fmt;
use std::ops::Range;

use object::pe::{self, ImageNtHeaders32, ImageNtHeaders64};
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader};
use object::{FileKind, LittleEndian as LE, ReadRef};

/// What the PE headers of a binary say, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeImage {
    /// A PE image.
    Image(PeHeaders),
    /// Not a PE image (an ELF binary, a truncated file, random bytes).
    NotPe {
        /// Why the headers could not be read, as the `object` crate says it.
        reason: String,
    },
}

/// The PE header facts a payload binary is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeHeaders {
    /// PE32 or PE32+ (64-bit).
    pub format: PeFormat,
    /// The machine the image is for (an `IMAGE_FILE_MACHINE_*` value; x86-64 is `0x8664`).
    pub machine: u16,
    /// The Windows subsystem it runs in (an `IMAGE_SUBSYSTEM_*` value; console is 3, GUI 2).
    pub subsystem: u16,
}

impl PeHeaders {
    /// Whether the machine is x86-64 (`IMAGE_FILE_MACHINE_AMD64`).
    pub fn is_x86_64(&self) -> bool {
        pe::Machine(self.machine) == pe::IMAGE_FILE_MACHINE_AMD64
    }

    /// Whether the subsystem is the Windows console (`IMAGE_SUBSYSTEM_WINDOWS_CUI`), as services need.
    pub fn is_console(&self) -> bool {
        pe::Subsystem(self.subsystem) == pe::IMAGE_SUBSYSTEM_WINDOWS_CUI
    }

    /// The machine's readable name: `x86-64`, `ARM64`, … or its number.
    pub fn machine_name(&self) -> String {
        machine_name(pe::Machine(self.machine))
    }

    /// The subsystem's readable name: `console`, `GUI`, … or its number.
    pub fn subsystem_name(&self) -> String {
        subsystem_name(pe::Subsystem(self.subsystem))
    }
}

/// The optional header format of a PE image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeFormat {
    /// 32-bit images.
    Pe32,
    /// 64-bit images, as every payload binary must be.
    Pe32Plus,
}

impl fmt::Display for PeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PeFormat::Pe32 => "PE32",
            PeFormat::Pe32Plus => "PE32+",
        })
    }
}

fn machine_name(machine: pe::Machine) -> String {
    let name = match machine {
        pe::IMAGE_FILE_MACHINE_AMD64 => "x86-64",
        pe::IMAGE_FILE_MACHINE_I386 => "x86",
        pe::IMAGE_FILE_MACHINE_ARM64 => "ARM64",
        pe::IMAGE_FILE_MACHINE_ARM64EC => "ARM64EC",
        pe::IMAGE_FILE_MACHINE_ARMNT => "ARM (Thumb-2)",
        pe::IMAGE_FILE_MACHINE_IA64 => "Itanium",
        _ => return format!("machine 0x{:04x}", machine.0),
    };
    name.to_owned()
}

fn subsystem_name(subsystem: pe::Subsystem) -> String {
    let name = match subsystem {
        pe::IMAGE_SUBSYSTEM_WINDOWS_CUI => "console",
        pe::IMAGE_SUBSYSTEM_WINDOWS_GUI => "GUI",
        pe::IMAGE_SUBSYSTEM_NATIVE => "native",
        pe::IMAGE_SUBSYSTEM_EFI_APPLICATION => "EFI application",
        _ => return format!("subsystem {}", subsystem.0),
    };
    name.to_owned()
}

/// The PE facts of a binary and where to look for its Go build information.
#[derive(Debug)]
pub(crate) struct PeReading {
    pub(crate) image: PeImage,
    /// File ranges of the initialized, writable sections, in section table order (empty when not PE).
    pub(crate) data_sections: Vec<Range<u64>>,
}

/// Reads the PE headers at the start of `data` (the whole file, read lazily by a `ReadCache` for files).
pub(crate) fn read_pe<'data, R: ReadRef<'data>>(data: R) -> PeReading {
    let outcome = match FileKind::parse(data) {
        Ok(FileKind::Pe64) => headers::<ImageNtHeaders64, R>(data, PeFormat::Pe32Plus),
        Ok(FileKind::Pe32) => headers::<ImageNtHeaders32, R>(data, PeFormat::Pe32),
        Ok(other) => Err(format!("a {other:?} file")),
        Err(error) => Err(error.to_string()),
    };
    match outcome {
        Ok(reading) => reading,
        Err(reason) => PeReading { image: PeImage::NotPe { reason }, data_sections: Vec::new() },
    }
}

fn headers<'data, Pe: ImageNtHeaders, R: ReadRef<'data>>(data: R, format: PeFormat) -> Result<PeReading, String> {
    let dos_header = pe::ImageDosHeader::parse(data).map_err(|error| error.to_string())?;
    let mut offset = u64::from(dos_header.nt_headers_offset());
    let (nt_headers, _) = Pe::parse(data, &mut offset).map_err(|error| error.to_string())?;
    let sections = nt_headers.sections(data, offset).map_err(|error| error.to_string())?;
    let writable_data = pe::IMAGE_SCN_CNT_INITIALIZED_DATA | pe::IMAGE_SCN_MEM_WRITE;
    let data_sections = sections
        .iter()
        .filter(|section| section.characteristics.get(LE).contains(writable_data))
        .map(|section| {
            let (start, size) = section.pe_file_range();
            u64::from(start)..u64::from(start) + u64::from(size)
        })
        .filter(|range| !range.is_empty())
        .collect();
    let headers = PeHeaders {
        format,
        machine: nt_headers.file_header().machine.get(LE).0,
        subsystem: nt_headers.optional_header().subsystem().0,
    };
    Ok(PeReading { image: PeImage::Image(headers), data_sections })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_pe_say_why() {
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0rest of an ELF file";
        for bytes in [&elf[..], b"MZ", b"MZ but with no NT headers at all, only text........"] {
            let reading = read_pe(bytes);
            assert!(matches!(&reading.image, PeImage::NotPe { reason } if !reason.is_empty()), "{reading:?}");
            assert!(reading.data_sections.is_empty());
        }
    }

    #[test]
    fn machines_and_subsystems_have_readable_names() {
        assert_eq!(machine_name(pe::IMAGE_FILE_MACHINE_AMD64), "x86-64");
        assert_eq!(machine_name(pe::IMAGE_FILE_MACHINE_ARM64), "ARM64");
        assert_eq!(machine_name(pe::Machine(0x1234)), "machine 0x1234");
        assert_eq!(subsystem_name(pe::IMAGE_SUBSYSTEM_WINDOWS_CUI), "console");
        assert_eq!(subsystem_name(pe::IMAGE_SUBSYSTEM_WINDOWS_GUI), "GUI");
        assert_eq!(subsystem_name(pe::Subsystem(42)), "subsystem 42");
        assert_eq!((PeFormat::Pe32.to_string(), PeFormat::Pe32Plus.to_string()), ("PE32".into(), "PE32+".into()));
    }
}
