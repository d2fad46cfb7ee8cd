package workflows

// Work windows name time zones ("MON-FRI 00:00-06:00 Europe/Berlin"), and a
// cursor decides when to wait by them. Every worker that runs this code
// must answer alike, whatever zoneinfo its host has (or lacks): the zone
// database is compiled in, so a window opens at the same instant on every
// worker and on replay.
import _ "time/tzdata"
