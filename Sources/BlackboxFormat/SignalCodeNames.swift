/// Names for `si_code` values, as in `<bits/siginfo-consts.h>` (Linux).
public enum SignalCodeNames {
    public static func name(signal: Int32, code: Int32) -> String? {
        switch code {
        case 0: return "SI_USER"
        case 0x80: return "SI_KERNEL"
        case -1: return "SI_QUEUE"
        case -6: return "SI_TKILL"
        default: break
        }
        let table: [Int32: [String]] = [
            4: [
                "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC",
                "ILL_BADSTK",
            ],
            8: [
                "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV",
                "FPE_FLTSUB",
            ],
            11: ["SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR"],
            7: ["BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"],
            5: ["TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT"],
            31: ["SYS_SECCOMP"],
        ]
        guard code >= 1, let names = table[signal], Int(code) <= names.count else { return nil }
        return names[Int(code) - 1]
    }
}
