# sweep.gp - the scaling-sweep plot of make bench (bench.py runs it):
#   gnuplot -e "datafile='results/sweep.tsv'; outfile='results/sweep.png'" sweep.gp
# Columns of sweep.tsv: series route tokens d_model elements req_bytes
# resp_bytes ms peak_bytes sgemm_ms; index 0 = /encode JSON over tokens
# (d_model 512), 1 = /encode JSON over d_model (512 tokens), 2 = /apply
# base64 over tokens (default model, d_model 512).
set terminal pngcairo size 1400,560 font "sans,10"
set output outfile
set datafile separator "\t"
set datafile missing "NaN"
set logscale xy 2
set format x "2^{%L}"
set grid
set key top left
set xlabel "elements in the input (tokens × d\\_model)"
set multiplot layout 1,2 title "posenc scaling: one request at a time, fresh server per point"

set title "time per request (client-observed)"
set ylabel "ms"
set format y "%g"
plot datafile index 0 using 5:8 with linespoints lw 2 pt 7 title "/encode JSON, tokens 64-8192, d 512", \
     datafile index 1 using 5:8 with linespoints lw 2 pt 5 title "/encode JSON, 512 tokens, d 64-4096", \
     datafile index 2 using 5:8 with linespoints lw 2 pt 9 title "/apply base64, tokens 64-8192 (QKV)", \
     datafile index 2 using 5:10 with linespoints lw 1 dt 2 pt 6 title "OpenBLAS sgemm alone, same QKV shapes"

set title "peak memory of the request (VmHWM − RSS before)"
set ylabel "MB"
plot datafile index 0 using 5:($9/1e6) with linespoints lw 2 pt 7 lc 1 title "/encode JSON, over tokens", \
     datafile index 0 using 5:(($6+$7)/1e6) with lines dt 2 lc 1 title "  its request + response bytes", \
     datafile index 1 using 5:($9/1e6) with linespoints lw 2 pt 5 lc 2 title "/encode JSON, over d\\_model", \
     datafile index 1 using 5:(($6+$7)/1e6) with lines dt 2 lc 2 title "  its request + response bytes", \
     datafile index 2 using 5:($9/1e6) with linespoints lw 2 pt 9 lc 3 title "/apply base64, over tokens", \
     datafile index 2 using 5:(($6+$7)/1e6) with lines dt 2 lc 3 title "  its request + response bytes"
unset multiplot
