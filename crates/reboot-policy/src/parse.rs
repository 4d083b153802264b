//! The values of the maintenance-window flags, in the forms kured's admins already write
//! (`kubereboot/kured` `pkg/timewindow`): days as `mo`, `mon`, `monday` or `1` (0 is Sunday), times as `15:04`,
//! `15:04:05`, `15`, `3pm` or `03:04pm`, and IANA time zone names.

use jiff::civil::{Time, Weekday};
use jiff::tz::{TimeZone, TimeZoneDatabase};

use crate::RebootSettingsError;

/// One `--reboot-days` entry: an English day name (two or three letters, or in full; any case) or a number from 0
/// (Sunday) to 6 (Saturday).
///
/// ```
/// use jiff::civil::Weekday;
/// assert_eq!(wmco_reboot_policy::parse_weekday("Sat")?, Weekday::Saturday);
/// assert_eq!(wmco_reboot_policy::parse_weekday("0")?, Weekday::Sunday);
/// # Ok::<(), wmco_reboot_policy::RebootSettingsError>(())
/// ```
///
/// # Errors
/// [`RebootSettingsError::UnknownWeekday`] naming the entry.
pub fn parse_weekday(text: &str) -> Result<Weekday, RebootSettingsError> {
    const DAYS: [(Weekday, &str); 7] = [
        (Weekday::Sunday, "sunday"),
        (Weekday::Monday, "monday"),
        (Weekday::Tuesday, "tuesday"),
        (Weekday::Wednesday, "wednesday"),
        (Weekday::Thursday, "thursday"),
        (Weekday::Friday, "friday"),
        (Weekday::Saturday, "saturday"),
    ];
    let lower = text.trim().to_ascii_lowercase();
    let named = |(_, name): &&(Weekday, &str)| {
        lower == *name || (lower.len() >= 2 && lower.len() <= 3 && name.starts_with(&lower))
    };
    if let Some((day, _)) = DAYS.iter().find(named) {
        return Ok(*day);
    }
    match lower.parse::<usize>() {
        Ok(number) if number < DAYS.len() => Ok(DAYS[number].0),
        _ => Err(RebootSettingsError::UnknownWeekday(text.to_owned())),
    }
}

/// A `--start-time` or `--end-time`: `H`, `H:MM` or `H:MM:SS` on the 24-hour clock, or the same with `am` or `pm`
/// (hours 1-12, `12am` is midnight); the hour has one or two digits, minutes and seconds two.
///
/// ```
/// use jiff::civil::time;
/// assert_eq!(wmco_reboot_policy::parse_time_of_day("0:00")?, time(0, 0, 0, 0));
/// assert_eq!(wmco_reboot_policy::parse_time_of_day("03:30pm")?, time(15, 30, 0, 0));
/// # Ok::<(), wmco_reboot_policy::RebootSettingsError>(())
/// ```
///
/// # Errors
/// [`RebootSettingsError::BadTimeOfDay`] naming the value and what is wrong with it.
pub fn parse_time_of_day(text: &str) -> Result<Time, RebootSettingsError> {
    let bad = |why: String| RebootSettingsError::BadTimeOfDay { text: text.to_owned(), why };
    let lower = text.trim().to_ascii_lowercase();
    let (clock, afternoon) = match (lower.strip_suffix("am"), lower.strip_suffix("pm")) {
        (Some(clock), _) => (clock, Some(false)),
        (_, Some(clock)) => (clock, Some(true)),
        _ => (lower.as_str(), None),
    };
    let fields: Vec<&str> = clock.split(':').collect();
    if fields.len() > 3 {
        return Err(bad("more than hours, minutes and seconds".into()));
    }
    let hour = clock_field(fields[0], "hour", 1..=2).map_err(bad)?;
    let minute = fields.get(1).map(|field| clock_field(field, "minute", 2..=2)).transpose().map_err(bad)?;
    let second = fields.get(2).map(|field| clock_field(field, "second", 2..=2)).transpose().map_err(bad)?;
    let hour = match afternoon {
        None if hour > 23 => return Err(bad(format!("hour {hour} is out of range 0-23"))),
        None => hour,
        Some(_) if !(1..=12).contains(&hour) => {
            return Err(bad(format!("hour {hour} is out of range 1-12 before am/pm")));
        }
        Some(afternoon) => hour % 12 + if afternoon { 12 } else { 0 },
    };
    let (minute, second) = (minute.unwrap_or(0), second.unwrap_or(0));
    for (value, name) in [(minute, "minute"), (second, "second")] {
        if value > 59 {
            return Err(bad(format!("{name} {value} is out of range 0-59")));
        }
    }
    Time::new(hour, minute, second, 0).map_err(|error| bad(error.to_string()))
}

/// One field of a time of day: `digits` decimal digits.
fn clock_field(field: &str, name: &str, digits: std::ops::RangeInclusive<usize>) -> Result<i8, String> {
    if !digits.contains(&field.len()) || !field.bytes().all(|byte| byte.is_ascii_digit()) {
        let count =
            if digits.start() == digits.end() { "two digits".to_owned() } else { "one or two digits".to_owned() };
        return Err(format!("{name} {field:?} is not a number of {count}"));
    }
    field.parse().map_err(|_| format!("{name} {field:?} is not a number"))
}

/// A `--time-zone`: `UTC` (always known, with or without a time zone database) or an IANA name looked up in the
/// system's database, else in the copy built into the binary (the operator image has no `/usr/share/zoneinfo`).
///
/// # Errors
/// [`RebootSettingsError::UnknownTimeZone`] naming the value.
pub fn parse_time_zone(name: &str) -> Result<TimeZone, RebootSettingsError> {
    time_zone_in(name, jiff::tz::db())
}

/// [`parse_time_zone`] in the database `db`.
///
/// ```
/// use jiff::tz::{TimeZone, TimeZoneDatabase};
/// let none = TimeZoneDatabase::none();
/// assert_eq!(wmco_reboot_policy::time_zone_in("UTC", &none)?, TimeZone::UTC);
/// assert!(wmco_reboot_policy::time_zone_in("Europe/Berlin", &none).is_err());
/// # Ok::<(), wmco_reboot_policy::RebootSettingsError>(())
/// ```
///
/// # Errors
/// [`RebootSettingsError::UnknownTimeZone`] naming the value.
pub fn time_zone_in(name: &str, db: &TimeZoneDatabase) -> Result<TimeZone, RebootSettingsError> {
    if name.eq_ignore_ascii_case("UTC") || name.eq_ignore_ascii_case("Etc/UTC") {
        return Ok(TimeZone::UTC);
    }
    db.get(name).map_err(|error| RebootSettingsError::UnknownTimeZone { name: name.to_owned(), why: error.to_string() })
}

#[cfg(test)]
mod tests {
    use jiff::civil::time;

    use super::*;

    #[test]
    fn days_take_kureds_names_and_numbers() {
        for (texts, day) in [
            (["su", "Sun", "SUNDAY", "0"], Weekday::Sunday),
            (["mo", "mon", "Monday", "1"], Weekday::Monday),
            (["tu", "tue", "tuesday", "2"], Weekday::Tuesday),
            (["we", "wed", "wednesday", "3"], Weekday::Wednesday),
            (["th", "thu", "thursday", "4"], Weekday::Thursday),
            (["fr", "fri", "friday", "5"], Weekday::Friday),
            (["sa", "sat", "saturday", "6"], Weekday::Saturday),
        ] {
            for text in texts {
                assert_eq!(parse_weekday(text), Ok(day), "{text}");
            }
        }
    }

    #[test]
    fn an_unknown_day_is_named_in_the_error() {
        for bad in ["7", "-1", "s", "sund", "mondays", "", "1.0", "holiday"] {
            let error = parse_weekday(bad).expect_err(bad);
            assert_eq!(error, RebootSettingsError::UnknownWeekday(bad.to_owned()));
            assert!(error.to_string().starts_with(&format!("unknown day {bad:?}")), "{error}");
        }
    }

    #[test]
    fn times_take_kureds_forms() {
        for (text, expected) in [
            ("0:00", time(0, 0, 0, 0)),
            ("02:00", time(2, 0, 0, 0)),
            ("15:04", time(15, 4, 0, 0)),
            ("23:59:59", time(23, 59, 59, 0)),
            ("15", time(15, 0, 0, 0)),
            ("3pm", time(15, 0, 0, 0)),
            ("03PM", time(15, 0, 0, 0)),
            ("03:04pm", time(15, 4, 0, 0)),
            ("12am", time(0, 0, 0, 0)),
            ("12pm", time(12, 0, 0, 0)),
            ("11:30am", time(11, 30, 0, 0)),
        ] {
            assert_eq!(parse_time_of_day(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn a_bad_time_is_named_with_what_is_wrong() {
        for (bad, why) in [
            ("25:00", "hour 25 is out of range 0-23"),
            ("24:00", "hour 24 is out of range 0-23"),
            ("13pm", "hour 13 is out of range 1-12 before am/pm"),
            ("0am", "hour 0 is out of range 1-12 before am/pm"),
            ("12:60", "minute 60 is out of range 0-59"),
            ("12:00:61", "second 61 is out of range 0-59"),
            ("12:5", "minute \"5\" is not a number of two digits"),
            ("noon", "hour \"noon\" is not a number of one or two digits"),
            ("", "hour \"\" is not a number of one or two digits"),
            ("1:00:00:00", "more than hours, minutes and seconds"),
            ("-1:00", "hour \"-1\" is not a number of one or two digits"),
        ] {
            let error = parse_time_of_day(bad).expect_err(bad);
            assert_eq!(
                error.to_string(),
                format!("invalid time of day {bad:?}: {why} (expected 15:04, 15:04:05, 15, 3pm or 03:04pm)")
            );
        }
    }

    #[test]
    fn utc_is_known_without_any_time_zone_database() {
        let none = TimeZoneDatabase::none();
        for name in ["UTC", "utc", "Etc/UTC"] {
            assert_eq!(time_zone_in(name, &none), Ok(TimeZone::UTC), "{name}");
        }
        assert_eq!(parse_time_zone("UTC"), Ok(TimeZone::UTC));
    }

    #[test]
    fn iana_zones_are_found_in_the_database_built_into_the_binary() {
        // What a container without /usr/share/zoneinfo uses (the `tzdb-bundle-always` feature).
        let bundled = TimeZoneDatabase::bundled();
        for name in ["Europe/Berlin", "America/New_York", "Asia/Kolkata"] {
            let zone = time_zone_in(name, &bundled).expect(name);
            assert_eq!(zone.iana_name(), Some(name));
        }
    }

    #[test]
    fn an_unknown_zone_is_named_in_the_error() {
        let error = parse_time_zone("Europe/Berln").expect_err("misspelt");
        assert!(matches!(&error, RebootSettingsError::UnknownTimeZone { name, .. } if name == "Europe/Berln"));
        assert!(error.to_string().starts_with("unknown time zone \"Europe/Berln\": "), "{error}");
        assert!(error.to_string().ends_with("(expected an IANA name such as Europe/Berlin, or UTC)"), "{error}");
    }
}
