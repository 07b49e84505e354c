# btl-ofi: turn help-mpi-btl-ofi.txt into the C table btl_ofi_report.c renders
# from (btl_ofi_help_text.h, made at build time). The file keeps Open MPI's
# help-file format: "[topic]" starts a message, a line starting with "#" is a
# comment, every other line is text. Open MPI 6 compiles its own help files
# into its library and no longer reads those of external components, so the
# component carries its messages itself, on every Open MPI version.
function flush_topic() {
    if (topic != "") {
        printf "    {\"%s\",\n%s     \"\"},\n", topic, body
    }
    body = ""
}
BEGIN {
    print "/* Generated from help-mpi-btl-ofi.txt by help_text.awk: do not edit. */"
    print "static const struct {"
    print "    const char *topic;"
    print "    const char *text;"
    print "} mca_btl_ofi_help_topics[] = {"
}
/^#/ { next }
/^\[[^]]+\]/ {
    flush_topic()
    topic = substr($0, 2, index($0, "]") - 2)
    next
}
topic != "" {
    line = $0
    gsub(/\\/, "\\\\", line)
    gsub(/"/, "\\\"", line)
    body = body "     \"" line "\\n\"\n"
}
END {
    flush_topic()
    print "};"
}
