#include "trainscope/viewer/widgets/viewer_flags.h"

#include "trainscope/client/client_security.h"

namespace trainscope::viewer {

base::ArgParser ViewerFlags() {
  base::ArgParser parser(
      "trainscope-viewer",
      "Watch a training job: overview, Marey graph, alerts, halt, and the training "
      "items with the largest loss contribution (Selection and Monitoring views).");
  parser.AddFlag("job", "JOB", "the job to show (required unless --synthetic)");
  parser.AddFlag("data-dir", "DIR", "open the job's stored log under DIR offline");
  parser.AddFlag("feed", "ENDPOINT",
                 "follow the collector's live feed (ZeroMQ PUB), e.g. tcp://127.0.0.1:7071");
  parser.AddFlag(
      "snapshot", "ENDPOINT",
      "the collector's snapshot server (ZeroMQ REP); default: the feed's host, port 7072");
  parser.AddFlag("collector", "HOST:PORT",
                 "the collector's gRPC Commands service, for recording on/off and halt");
  parser.AddFlag("token", "TOKEN", "the job's token for commands that change it");
  parser.AddFlag("token-file", "FILE", "read the job's token from FILE");
  parser.AddBoolFlag("synthetic", "show a generated demo job (a straggler on one device)");
  parser.AddFlag("synthetic-devices", "N", "devices of the synthetic job", "6");
  parser.AddFlag("synthetic-stages", "N", "pipeline stages of the synthetic job", "1");
  parser.AddFlag("synthetic-steps", "N", "steps of the synthetic job", "8");
  parser.AddFlag("straggler", "RANK", "the synthetic job's slow device; -1: none", "3");
  parser.AddBoolFlag("synthetic-gpu",
                     "the synthetic job runs on GPUs: kernels, NCCL kernels and copies on streams");
  parser.AddFlag("slow-link", "SRC:DST",
                 "the synthetic job's slow link: its transfers from rank SRC to rank DST take 8x "
                 "as long (the traffic matrix's heaviest cell)");
  parser.AddFlag("synthetic-hosts", "N", "hosts of the synthetic job", "2");
  parser.AddFlag("synthetic-racks", "N", "racks the synthetic job's hosts sit in (0: none)", "0");
  parser.AddFlag("topology", "FILE",
                 "racks of the hosts for the cluster views: one 'HOST RACK' a line ('#' comments)");
  parser.AddFlag("level", "LEVEL",
                 "the cluster views' aggregation: device, host or rack (default: device for the "
                 "topology and Hilbert ring, host for the trend and chord views)");
  parser.AddFlag("frame-steps", "N", "the trend view's steps per frame", "1");
  parser.AddFlag("frame", "N", "the trend view's marked frame, from 0 (default: the newest)");
  parser.AddFlag("select-ranks", "LIST",
                 "select these devices in every linked view (as a lasso does), e.g. 0-3");
  parser.AddFlag("select-link", "SRC:DST", "select this link in every linked view");
  parser.AddFlag("mesh-width", "W",
                 "devices sit on a mesh W wide (rank % W, rank / W): the Hilbert ring orders "
                 "them along a Hilbert curve over it");
  parser.AddFlag("render", "VIEW",
                 "render offscreen and exit: overview, marey, alerts, jobs, selection, monitoring, "
                 "traffic-matrix, topology, trend, chord, hilbert-ring, range-stats, all (the "
                 "window) or each (every one, FILE-VIEW.png)");
  parser.AddFlag("out", "FILE.png", "where --render writes");
  parser.AddFlag("width", "PX", "rendered width", "1600");
  parser.AddFlag("height", "PX", "rendered height", "900");
  parser.AddFlag("step", "N", "select step N (pinned) instead of following the newest");
  parser.AddFlag("ranks", "LIST", "show only these ranks in the Marey graph, e.g. 0,2-3");
  parser.AddFlag("range-steps", "FIRST-LAST",
                 "the range statistics' steps (as a shift-drag in the Marey graph picks them), "
                 "e.g. 100-120; default: the whole loaded job");
  parser.AddFlag("range-operator", "NAME",
                 "outline this operator in the Marey graph (as a click on its row in the top "
                 "operators table does)");
  parser.AddFlag("alert", "ROW", "select alert ROW (0 = newest): its step, devices and operator");
  parser.AddFlag("search", "TEXT",
                 "search as the window's field does (an operator name's substring, step N or #N, "
                 "rank N or rN) and show the first match: the Marey graph zoomed to it, outlined, "
                 "its step and device selected");
  parser.AddFlag("search-match", "N", "with --search: show the Nth match (from 1) in time order",
                 "1");
  parser.AddFlag("grouping", "MODE", "Marey rows: none, stage or host", "none");
  parser.AddFlag("item", "N",
                 "the training item shown in the Monitoring view (default: the top item)");
  parser.AddFlag("iteration", "N",
                 "the Monitoring view's slider: the item's snapshot at iteration N (default: the "
                 "newest)");
  parser.AddFlag("map-scale", "SCALE",
                 "the Monitoring view's colour scale: per-iteration (each iteration on its own "
                 "maximum), shared (one linear scale over every snapshot) or log",
                 "per-iteration");
  parser.AddFlag("tab", "TAB",
                 "the window's tab: performance (overview and Marey graph) or loss (Selection and "
                 "Monitoring views); default: loss with --item or --iteration, else performance");
  parser.AddRepeatedFlag("expand", "GROUP", "expand a Marey group, e.g. 'stage 0'");
  parser.AddBoolFlag("raw", "place operators by the devices' raw clocks, not the aligned one");
  parser.AddFlag("cpu-rows", "MODE",
                 "Marey rows of the CPU operators of devices with GPU streams: show (a thin row) "
                 "or hide",
                 "show");
  parser.AddFlag("from-ms", "MS", "Marey time range start, ms after the first operator");
  parser.AddFlag("to-ms", "MS", "Marey time range end, ms after the first operator");
  parser.AddFlag("marey-steps", "N",
                 "Marey graph: follow the newest N steps (around --step when given); 0: the "
                 "whole run");
  parser.AddFlag("history-steps", "N", "live: steps fetched from the collector at start", "50");
  parser.AddFlag("max-operators", "N",
                 "operators loaded at most (oldest steps dropped; the window says so)", "4000000");
  parser.AddFlag("steps", "FIRST-LAST",
                 "--data-dir: load only these steps (their operators up to --max-operators), "
                 "e.g. 100-120");
  // TLS and the read token for the Commands service, CURVE for the feed and
  // snapshot sockets: the same flags and variables as the trainscope CLI.
  client::ClientSecurity::AddFlags(&parser);
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope-viewer --feed tcp://127.0.0.1:7071 --job demo --collector 127.0.0.1:7070\n"
      "  trainscope-viewer --data-dir /tmp/ts-data --job demo --render marey --out marey.png\n"
      "  trainscope-viewer --data-dir /tmp/ts-data --job demo --render monitoring --item 1432 "
      "--iteration 300 --out item.png\n"
      "  QT_QPA_PLATFORM=offscreen trainscope-viewer --synthetic --render each --out "
      "docs/demo.png\n"
      "Environment: TRAINSCOPE_TOKEN (the job's token); QT_QPA_PLATFORM=offscreen is set by "
      "--render when unset.");
  return parser;
}

}  // namespace trainscope::viewer
