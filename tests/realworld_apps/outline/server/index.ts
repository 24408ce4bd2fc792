import throng from "throng";
import env from "./env";

const webProcessCount = env.WEB_CONCURRENCY;
void throng({ worker: () => import("./main"), count: webProcessCount });
