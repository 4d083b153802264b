//! [`MaintenanceWindow`]: the days and local times at which reboots the host asked for may start, as kured's admins
//! write them (`--reboot-days`, `--start-time`, `--end-time`, `--time-zone`).

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Time, Weekday, time};
use jiff::tz::TimeZone;

use crate::RebootSettingsError;

/// The days and wall-clock times, in one time zone, at which a reboot may start.
///
/// The start is inclusive and so is the end's whole second (`--end-time=04:00` lets a reboot start until 04:00:00.999,
/// as kured does). A window whose end lies before its start crosses midnight: it opens on a listed day and closes on
/// the next one (`--reboot-days=sa --start-time=22:00 --end-time=04:00` is Saturday 22:00 to Sunday 04:00), where
/// kured would never open it (its `pkg/timewindow` compares within one calendar day, kubereboot/kured#204). Times are
/// wall-clock times of the zone, so the window follows daylight saving time. The default is always open (every day,
/// 00:00 to 23:59:59, UTC: kured's defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaintenanceWindow {
    /// Bit `n` set: the window opens on the day `n` days after Sunday.
    days: u8,
    start: Time,
    end: Time,
    zone: TimeZone,
}

/// Every day of the week.
const EVERY_DAY: u8 = 0b111_1111;
/// kured's default `--start-time` (`0:00`).
const DAY_START: Time = time(0, 0, 0, 0);
/// kured's default `--end-time` (`23:59:59`).
const DAY_END: Time = time(23, 59, 59, 0);

impl Default for MaintenanceWindow {
    fn default() -> Self {
        MaintenanceWindow { days: EVERY_DAY, start: DAY_START, end: DAY_END, zone: TimeZone::UTC }
    }
}

impl MaintenanceWindow {
    /// The window opening on `days` from `start` to `end` (whole seconds; a smaller part is dropped) in `zone`.
    ///
    /// ```
    /// use jiff::civil::{Weekday, time};
    /// use jiff::tz::TimeZone;
    /// use wmco_reboot_policy::MaintenanceWindow;
    ///
    /// let night = MaintenanceWindow::new(&[Weekday::Saturday], time(22, 0, 0, 0), time(4, 0, 0, 0), TimeZone::UTC)?;
    /// assert!(night.contains("2026-11-29T03:59:59Z".parse()?)); // a Sunday, the window opened on Saturday
    /// assert!(!night.contains("2026-11-29T22:00:00Z".parse()?)); // Sunday evening: Sunday is not listed
    /// assert_eq!(night.to_string(), "sat 22:00:00-04:00:00 UTC");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RebootSettingsError::NoDays`] for no day, [`RebootSettingsError::EmptyWindow`] when start equals end.
    pub fn new(days: &[Weekday], start: Time, end: Time, zone: TimeZone) -> Result<Self, RebootSettingsError> {
        let (start, end) = (whole_second(start), whole_second(end));
        if start == end {
            return Err(RebootSettingsError::EmptyWindow(start.to_string()));
        }
        let days = days.iter().fold(0, |set, day| set | day_bit(*day));
        if days == 0 {
            return Err(RebootSettingsError::NoDays);
        }
        Ok(MaintenanceWindow { days, start, end, zone })
    }

    /// Whether the window is open at every instant (every day, the whole day).
    pub fn is_always_open(&self) -> bool {
        self.days == EVERY_DAY && self.start == DAY_START && self.end == DAY_END
    }

    /// Whether a reboot may start at `now`.
    pub fn contains(&self, now: Timestamp) -> bool {
        let local = self.zone.to_datetime(now);
        let (day, clock) = (local.weekday(), whole_second(local.time()));
        if self.start < self.end {
            self.opens_on(day) && self.start <= clock && clock <= self.end
        } else {
            (self.opens_on(day) && self.start <= clock) || (self.opens_on(day.previous()) && clock <= self.end)
        }
    }

    fn opens_on(&self, day: Weekday) -> bool {
        self.days & day_bit(day) != 0
    }
}

/// `mon,sat 22:00:00-04:00:00 Europe/Berlin`, or `always` for the default.
impl fmt::Display for MaintenanceWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_always_open() {
            return f.write_str("always");
        }
        const NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let days: Vec<&str> = (0..7).filter(|n| self.days & (1 << n) != 0).map(|n| NAMES[n]).collect();
        let days = if self.days == EVERY_DAY { "every day".to_owned() } else { days.join(",") };
        let zone = self.zone.iana_name().unwrap_or("(unnamed time zone)");
        write!(f, "{days} {}-{} {zone}", self.start, self.end)
    }
}

fn day_bit(day: Weekday) -> u8 {
    1 << day.to_sunday_zero_offset()
}

fn whole_second(clock: Time) -> Time {
    time(clock.hour(), clock.minute(), clock.second(), 0)
}

#[cfg(test)]
mod tests {
    use jiff::tz::TimeZoneDatabase;

    use super::*;
    use crate::{parse_time_of_day, parse_weekday, time_zone_in};

    /// The window of kured-style flag values, zones from the database built into the binary.
    fn window(days: &str, start: &str, end: &str, zone: &str) -> MaintenanceWindow {
        let days: Vec<Weekday> = days.split(',').map(|day| parse_weekday(day).expect("day")).collect();
        let zone = time_zone_in(zone, &TimeZoneDatabase::bundled()).expect("zone");
        let (start, end) = (parse_time_of_day(start).expect("start"), parse_time_of_day(end).expect("end"));
        MaintenanceWindow::new(&days, start, end, zone).expect("window")
    }

    fn at(instant: &str) -> Timestamp {
        instant.parse().expect("timestamp")
    }

    /// Asserts whether `window` is open at each instant.
    fn assert_open_at(window: &MaintenanceWindow, cases: &[(&str, bool)]) {
        for (instant, open) in cases {
            assert_eq!(window.contains(at(instant)), *open, "{window} at {instant}");
        }
    }

    #[test]
    fn the_default_window_is_always_open() {
        let always = MaintenanceWindow::default();
        assert!(always.is_always_open());
        assert_eq!(always, window("su,mo,tu,we,th,fr,sa", "0:00", "23:59:59", "UTC"));
        assert_open_at(
            &always,
            &[("2026-11-29T00:00:00Z", true), ("2026-11-29T23:59:59.999Z", true), ("2026-11-30T12:00:00Z", true)],
        );
        assert_eq!(always.to_string(), "always");
    }

    #[test]
    fn a_daytime_window_is_open_from_its_start_through_its_end_second_on_listed_days() {
        // 2026-11-30 is a Monday.
        let weekdays = window("mo,tu,we,th,fr", "9am", "17:00", "UTC");
        assert_open_at(
            &weekdays,
            &[
                ("2026-11-30T08:59:59.999Z", false),
                ("2026-11-30T09:00:00Z", true),
                ("2026-11-30T12:00:00Z", true),
                ("2026-11-30T17:00:00.999Z", true),
                ("2026-11-30T17:00:01Z", false),
                ("2026-11-29T12:00:00Z", false), // Sunday
                ("2026-12-05T12:00:00Z", false), // Saturday
            ],
        );
        assert_eq!(weekdays.to_string(), "mon,tue,wed,thu,fri 09:00:00-17:00:00 UTC");
        assert!(!weekdays.is_always_open());
    }

    #[test]
    fn a_window_across_midnight_belongs_to_the_day_it_opens() {
        // Saturday 22:00 to Sunday 04:00; 2026-11-28 is a Saturday.
        let night = window("sa", "22:00", "04:00", "UTC");
        assert_open_at(
            &night,
            &[
                ("2026-11-28T21:59:59Z", false),
                ("2026-11-28T22:00:00Z", true),
                ("2026-11-28T23:59:59.999Z", true),
                ("2026-11-29T00:00:00Z", true),
                ("2026-11-29T04:00:00.5Z", true),
                ("2026-11-29T04:00:01Z", false),
                ("2026-11-29T22:30:00Z", false), // Sunday night: Sunday is not listed
                ("2026-11-28T02:00:00Z", false), // Saturday early morning belongs to Friday's window
            ],
        );
    }

    #[test]
    fn a_window_follows_its_time_zone_and_daylight_saving_time() {
        // 02:00-04:00 in Berlin is 01:00-03:00 UTC in winter (CET) and 00:00-02:00 UTC in summer (CEST).
        let berlin = window("su,mo,tu,we,th,fr,sa", "02:00", "04:00", "Europe/Berlin");
        assert_open_at(
            &berlin,
            &[
                ("2026-01-15T00:30:00Z", false),
                ("2026-01-15T01:30:00Z", true),
                ("2026-01-15T03:30:00Z", false),
                ("2026-07-15T00:30:00Z", true),
                ("2026-07-15T01:30:00Z", true),
                ("2026-07-15T02:30:00Z", false),
            ],
        );
        assert_eq!(berlin.to_string(), "every day 02:00:00-04:00:00 Europe/Berlin");
    }

    #[test]
    fn the_day_is_the_local_day_of_the_zone() {
        // Monday 03:00 UTC is Sunday 22:00 in New York (EST).
        let new_york_sunday = window("su", "21:00", "23:00", "America/New_York");
        assert!(new_york_sunday.contains(at("2026-11-30T03:00:00Z")));
        assert!(!window("mo", "21:00", "23:00", "America/New_York").contains(at("2026-11-30T03:00:00Z")));
    }

    #[test]
    fn a_window_across_the_autumn_clock_change_keeps_both_one_oclocks() {
        // 2026-11-01 01:00-02:00 happens twice in New York (EDT, then EST): both are inside 00:30-01:59.
        let early = window("su", "00:30", "01:59", "America/New_York");
        // 01:30 EDT, 01:30 EST, 02:30 EST.
        assert_open_at(
            &early,
            &[("2026-11-01T05:30:00Z", true), ("2026-11-01T06:30:00Z", true), ("2026-11-01T07:30:00Z", false)],
        );
    }

    #[test]
    fn an_empty_window_or_no_day_is_refused() {
        let noon = time(12, 0, 0, 0);
        let error = MaintenanceWindow::new(&[Weekday::Monday], noon, noon, TimeZone::UTC).expect_err("empty");
        assert_eq!(error, RebootSettingsError::EmptyWindow("12:00:00".into()));
        assert!(error.to_string().starts_with("--start-time and --end-time are both 12:00:00"), "{error}");
        let error = MaintenanceWindow::new(&[], noon, time(13, 0, 0, 0), TimeZone::UTC).expect_err("no day");
        assert_eq!(error, RebootSettingsError::NoDays);
    }
}
