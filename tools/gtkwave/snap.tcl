# Run by `gtkwave -R snap.tcl -P 700`: GTKWave re-runs this script every 700 ms.
# (-S runs a script before the window is drawn, and Tcl `after` never fires
# there, so a counter over re-runs is the way to wait for the first draw.)
# The picture shows the view the save file opens on.
global snapn
if {![info exists snapn]} { set snapn 0 }
incr snapn
if {$snapn == 3} {
  exec import -window root -crop 1200x700+0+0 +repage $::env(AAEMU_SNAP_PNG)
  gtkwave::/File/Quit
}
