# Run by probe.sh as `gtkwave -R probe.tcl -P 700`: once the window has been
# drawn (the second run), it writes what GTKWave shows to $AAEMU_PROBE_OUT
# and quits: the time window, the wave area's width, every trace's flags and
# name, and the value each trace shows at each time in $AAEMU_PROBE_TIMES
# (the marker is put there).
global proben
if {![info exists proben]} { set proben 0 }
incr proben
if {$proben == 2} {
  set f [open $::env(AAEMU_PROBE_OUT) w]
  puts $f "window [gtkwave::getWindowStartTime] [gtkwave::getWindowEndTime]"
  puts $f "wavewidth [gtkwave::getWaveWidth]"
  set n [gtkwave::getTotalNumTraces]
  for {set i 0} {$i < $n} {incr i} {
    puts $f "trace $i [gtkwave::getTraceFlagsFromIndex $i] [gtkwave::getTraceNameFromIndex $i]"
  }
  foreach t $::env(AAEMU_PROBE_TIMES) {
    gtkwave::setMarker $t
    for {set i 0} {$i < $n} {incr i} {
      puts $f "value $t $i [gtkwave::getTraceValueAtMarkerFromIndex $i]"
    }
  }
  close $f
  gtkwave::/File/Quit
}
