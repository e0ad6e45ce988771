package machine

// Kinds of pages the machine and the workloads label their mappings with
// (Node.Label), for the IOMMU's IOTLB statistics by kind
// (machine.iommu.iotlb_by_kind); the IOMMU does not know what they mean.
const (
	KindTable       = "table"       // a workload's data structure: the DHT's table and overflow heap
	KindLog         = "log"         // access logs and their flushing pages
	KindQueues      = "queues"      // send and receive queues (work requests), descriptor rings
	KindCompletions = "completions" // completion queues
	KindPayload     = "payload"     // the buffers data is put from and got into
)

// PageKinds are the kinds, in the order they are reported.
var PageKinds = []string{KindTable, KindLog, KindQueues, KindCompletions, KindPayload}

// Label gives the pages of [addr, addr+size) of the NICs' domain a kind,
// for the IOMMU's statistics (nothing without machine.iommu.iotlb_by_kind
// or iotlb_only).
func (n *Node) Label(addr, size uint64, kind string) error {
	return n.Driver.Label(nicDomain, addr&^0xfff, size+addr&0xfff, kind)
}
