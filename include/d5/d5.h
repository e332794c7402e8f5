/* d5: a benchmarking meta-framework for deep learning. The umbrella header. */
#ifndef D5_D5_H
#define D5_D5_H

#include "d5/compare.h"
#include "d5/core.h"
#include "d5/datasets.h"
#include "d5/distributed.h"
#include "d5/executor.h"
#include "d5/machine.h"
#include "d5/memory.h"
#include "d5/models.h"
#include "d5/network.h"
#include "d5/onnx.h"
#include "d5/operator.h"
#include "d5/report.h"
#include "d5/runlog.h"
#include "d5/stats.h"
#include "d5/step_profile.h"
#include "d5/sysmon.h"
#include "d5/threads.h"
#include "d5/timer.h"
#include "d5/training.h"
#include "d5/validate.h"

#endif
